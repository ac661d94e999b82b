/**
 * Shared rate control for all workers of a run: rate limits are learned from the server's 429
 * answers, never hammered.
 *
 * - Before the first 429 nothing is paced (unless `maxRequestsPerSecond` is set), so a server
 *   without a limit is never slowed down.
 * - A 429 sets one shared pause (Retry-After, or 1 s when absent) that every worker waits out
 *   before its next attempt. 429s to requests that were already in flight belong to the same
 *   event: they lengthen the pause but teach nothing new.
 * - The ceiling is learned from the event: the requests the server accepted in the second before
 *   it, counted when the pause ends so that answers still in flight are included. The pace is then
 *   `headroom` × the ceiling, with requests spaced evenly (1000 / pace ms) so they never bunch
 *   inside the server's window.
 * - Like TCP's slow start threshold, the ceiling is probed only now and then: the pace holds for
 *   `probeAfterMs`, then grows slowly past the ceiling. A probe that meets a 429 keeps the ceiling
 *   (raised to what the server accepted) and doubles the hold; a 429 while holding under the
 *   ceiling lowers it, a little (timing noise), or to the accepted count when that is far lower
 *   (the limit has changed).
 * - Concurrency follows AIMD: halved on a 429 event, raised by one after `concurrency` successes
 *   in a row, never above the configured maximum.
 */
import type { Sleep } from '../util/sleep.js';

export interface RateControllerOptions {
  maxConcurrency: number;
  now: () => number;
  sleep: Sleep;
  /** Fixed upper bound on requests per second (config `maxRequestsPerSecond`), if any. */
  maxRequestsPerSecond?: number;
  /** Share of the learned ceiling that is paced at. Default 0.98. */
  headroom?: number;
  /** How long the pace holds under the ceiling before probing past it, ms. Default 60 000; doubled after each failed probe, up to 16 times. */
  probeAfterMs?: number;
  /** Growth of the pace while probing, requests per second per second. Default 1 % of the ceiling. */
  rateIncreasePerSecond?: number;
}

/** A 429 this far below the ceiling in accepted requests means the limit itself has changed. */
const LIMIT_CHANGED = 0.9;
/** How much a 429 while holding under the ceiling lowers it. */
const NOISE_DECREASE = 0.98;
/** Most requests the release-window check looks back over. */
const MAX_WINDOW = 256;

export class RateController {
  private concurrencyNow: number;
  private successes = 0;
  private pausedUntil = 0;
  private nextSlot = 0;
  /** Requests per second the server accepts, as learned from 429s; undefined until the first. */
  private ceiling: number | undefined;
  /** The pace starts growing past the ceiling at this time. */
  private probeFrom = 0;
  private holdMs: number;
  /** Start of the last 429 event; its 429s end with the pause. */
  private eventAt = -Infinity;
  /** Set when the event's ceiling is a count still to be completed at the end of the pause. */
  private counting = false;
  /** Completion times of successful attempts, oldest first, from `doneHead` on. */
  private done: number[] = [];
  private doneHead = 0;
  /** Release times of recent attempts, oldest first. */
  private released: number[] = [];
  rateLimitedCount = 0;
  /** Called whenever the allowed concurrency changes (the chunk runner resizes its pool). */
  onConcurrencyChange: ((n: number) => void) | undefined;

  constructor(private readonly opts: RateControllerOptions) {
    this.concurrencyNow = opts.maxConcurrency;
    this.holdMs = opts.probeAfterMs ?? 60_000;
  }

  get concurrency(): number {
    return this.concurrencyNow;
  }

  /** The pace in force, requests per second (undefined: unpaced). */
  get pace(): number | undefined {
    const learned = this.learnedPace(this.opts.now());
    const fixed = this.opts.maxRequestsPerSecond;
    if (learned === undefined) return fixed;
    return fixed === undefined ? learned : Math.min(fixed, learned);
  }

  private learnedPace(now: number): number | undefined {
    if (this.ceiling === undefined) return undefined;
    const base = this.ceiling * (this.opts.headroom ?? 0.98);
    const probing = Math.max(0, (now - this.probeFrom) / 1000);
    return base + probing * (this.opts.rateIncreasePerSecond ?? this.ceiling * 0.01);
  }

  /** Waits for the shared pause and for this request's slot under the pace. */
  async beforeAttempt(signal?: AbortSignal): Promise<void> {
    let slot: number | undefined;
    for (;;) {
      const now = this.opts.now();
      if (this.counting && now >= this.pausedUntil) this.finishCount();
      if (now < this.pausedUntil) {
        // A pause that began while this request waited for its slot: the slot is lost.
        slot = undefined;
        await this.opts.sleep(this.pausedUntil - now, signal);
        continue;
      }
      const pace = this.pace;
      if (pace !== undefined && slot === undefined) {
        // Reserve the slot before sleeping so concurrent callers queue behind it.
        slot = Math.max(this.nextSlot, now);
        this.nextSlot = slot + 1000 / pace;
      }
      const at = pace === undefined ? now : Math.max(slot as number, this.windowOpensAt(pace));
      if (at <= now) {
        this.released.push(now);
        if (this.released.length > 2 * MAX_WINDOW) this.released.splice(0, this.released.length - MAX_WINDOW);
        return;
      }
      await this.opts.sleep(at - now, signal);
    }
  }

  /**
   * When the next request keeps the last ceil(pace) requests over pace's span: a request released
   * late (a busy event loop) does not then bunch with the ones after it inside the server's window.
   */
  private windowOpensAt(pace: number): number {
    const k = Math.min(Math.ceil(pace), MAX_WINDOW, this.released.length);
    if (k === 0) return -Infinity;
    return (this.released[this.released.length - k] as number) + (k * 1000) / pace;
  }

  onRateLimited(retryAfterMs: number | undefined): void {
    const now = this.opts.now();
    this.rateLimitedCount++;
    const sameEvent = now < this.pausedUntil;
    this.pausedUntil = Math.max(this.pausedUntil, now + (retryAfterMs ?? 1000));
    this.nextSlot = Math.max(this.nextSlot, this.pausedUntil);
    if (sameEvent) return;

    const accepted = this.acceptedSince(now - 1000);
    const probing = this.ceiling !== undefined && now >= this.probeFrom;
    if (this.ceiling === undefined || accepted < this.ceiling * LIMIT_CHANGED) {
      this.ceiling = Math.max(1, accepted);
      this.counting = true;
    } else if (probing) {
      this.ceiling = Math.max(this.ceiling, accepted);
      this.holdMs = Math.min(this.holdMs * 2, (this.opts.probeAfterMs ?? 60_000) * 16);
    } else {
      this.ceiling *= NOISE_DECREASE;
    }
    this.eventAt = now;
    this.probeFrom = this.pausedUntil + this.holdMs;

    const next = Math.max(1, Math.floor(this.concurrencyNow / 2));
    this.successes = 0;
    if (next !== this.concurrencyNow) {
      this.concurrencyNow = next;
      this.onConcurrencyChange?.(next);
    }
  }

  onSuccess(): void {
    const now = this.opts.now();
    this.done.push(now);
    if (this.done.length - this.doneHead > 4096) this.acceptedSince(now - 1000);
    if (this.concurrencyNow >= this.opts.maxConcurrency) return;
    this.successes++;
    if (this.successes >= this.concurrencyNow) {
      this.successes = 0;
      this.concurrencyNow++;
      this.onConcurrencyChange?.(this.concurrencyNow);
    }
  }

  /** The event's count, now that the answers in flight when it came are in. */
  private finishCount(): void {
    this.counting = false;
    this.ceiling = Math.max(this.ceiling ?? 1, this.acceptedSince(this.eventAt - 1000));
  }

  /** Successful attempts completed after `since`; forgets older ones. */
  private acceptedSince(since: number): number {
    const keepFrom = Math.min(since, this.counting ? this.eventAt - 1000 : since);
    while (this.doneHead < this.done.length && (this.done[this.doneHead] as number) <= keepFrom) this.doneHead++;
    if (this.doneHead > 1024) {
      this.done = this.done.slice(this.doneHead);
      this.doneHead = 0;
    }
    let n = 0;
    for (let i = this.done.length - 1; i >= this.doneHead && (this.done[i] as number) > since; i--) n++;
    return n;
  }
}
