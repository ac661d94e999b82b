/**
 * Shared rate control for all workers of a run.
 *
 * - A 429 sets one shared pause (Retry-After, or 1 s when absent) that every worker waits out
 *   before its next attempt, instead of each hammering on its own.
 * - Concurrency follows AIMD: halved on a 429, raised by one after `concurrency` successes in a
 *   row, never above the configured maximum.
 * - The request rate is learned: a 429 sets a pace just under the rate observed in the second
 *   before it; the pace then creeps up by `rateIncreasePerSecond` each second without a 429.
 */
import type { Sleep } from '../util/sleep.js';

export interface RateControllerOptions {
  maxConcurrency: number;
  now: () => number;
  sleep: Sleep;
  /** Fixed upper bound on requests per second (config `maxRequestsPerSecond`), if any. */
  maxRequestsPerSecond?: number;
  /** Learned-rate growth, requests per second per second without 429. Default 0.05. */
  rateIncreasePerSecond?: number;
}

export class RateController {
  private concurrencyNow: number;
  private successes = 0;
  private pausedUntil = 0;
  private nextSlot = 0;
  /** Learned pace in requests per second; undefined until the first 429. */
  private learnedRps: number | undefined;
  private lastRateLimitAt = 0;
  private readonly starts: number[] = [];
  rateLimitedCount = 0;
  /** Called whenever the allowed concurrency changes (the chunk runner resizes its pool). */
  onConcurrencyChange: ((n: number) => void) | undefined;

  constructor(private readonly opts: RateControllerOptions) {
    this.concurrencyNow = opts.maxConcurrency;
  }

  get concurrency(): number {
    return this.concurrencyNow;
  }

  /** The pace in force, requests per second (undefined: unpaced). */
  get pace(): number | undefined {
    const learned = this.currentLearnedRps();
    const fixed = this.opts.maxRequestsPerSecond;
    if (learned === undefined) return fixed;
    return fixed === undefined ? learned : Math.min(fixed, learned);
  }

  private currentLearnedRps(): number | undefined {
    if (this.learnedRps === undefined) return undefined;
    const quietSeconds = Math.max(0, (this.opts.now() - this.lastRateLimitAt) / 1000);
    return this.learnedRps + quietSeconds * (this.opts.rateIncreasePerSecond ?? 0.05);
  }

  /** Waits for the shared pause and for this request's slot under the pace. */
  async beforeAttempt(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const now = this.opts.now();
      const pace = this.pace;
      let at = Math.max(now, this.pausedUntil);
      if (pace !== undefined) at = Math.max(at, this.nextSlot);
      if (at <= now) {
        if (pace !== undefined) this.nextSlot = Math.max(this.nextSlot, now) + 1000 / pace;
        this.starts.push(now);
        if (this.starts.length > 256) this.starts.splice(0, this.starts.length - 256);
        return;
      }
      if (pace !== undefined && at === this.nextSlot) {
        // Reserve the slot before sleeping so concurrent callers queue behind it.
        this.nextSlot = at + 1000 / pace;
        await this.opts.sleep(at - now, signal);
        this.starts.push(at);
        return;
      }
      await this.opts.sleep(at - now, signal);
    }
  }

  onRateLimited(retryAfterMs: number | undefined): void {
    const now = this.opts.now();
    this.rateLimitedCount++;
    this.pausedUntil = Math.max(this.pausedUntil, now + (retryAfterMs ?? 1000));
    const observed = this.starts.filter((t) => t > now - 1000).length;
    const current = this.currentLearnedRps();
    const basis = current !== undefined ? Math.min(current, Math.max(observed, 1)) : Math.max(observed, 1);
    this.learnedRps = Math.max(0.5, basis * 0.9);
    this.lastRateLimitAt = now;
    this.nextSlot = Math.max(this.nextSlot, this.pausedUntil);
    const next = Math.max(1, Math.floor(this.concurrencyNow / 2));
    this.successes = 0;
    if (next !== this.concurrencyNow) {
      this.concurrencyNow = next;
      this.onConcurrencyChange?.(next);
    }
  }

  onSuccess(): void {
    if (this.concurrencyNow >= this.opts.maxConcurrency) return;
    this.successes++;
    if (this.successes >= this.concurrencyNow) {
      this.successes = 0;
      this.concurrencyNow++;
      this.onConcurrencyChange?.(this.concurrencyNow);
    }
  }
}
