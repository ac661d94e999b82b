/**
 * Shared rate control for all workers of a run: the server's rate limit is learned from its 429
 * answers, then kept to, so that a run meets a handful of 429s rather than one every few seconds.
 *
 * - Before the first 429 nothing is paced (unless `maxRequestsPerSecond` is set): a server
 *   without a limit is never slowed down.
 * - A 429 sets one shared pause (Retry-After, or 1 s when absent) that every worker waits out
 *   before its next attempt, including a worker already waiting for its slot. 429s that come
 *   back during the pause answer requests sent before it: they lengthen the pause, nothing more.
 * - The ceiling is what the server accepted in the second before the 429: the successful answers
 *   of that second (for the first 429, also those that arrive just after its answer, which has
 *   no body to send and can overtake them). The pace is then `headroom` × the ceiling, requests
 *   spaced evenly so that they never bunch inside the server's window.
 * - A later 429 while holding the pace is timing noise (a request sent late by a busy event loop
 *   meets one sent on time): the headroom narrows by 2 % and widens back by 2 % in 5 minutes.
 *   One whose accepted rate is far below the ceiling means the limit itself changed: the ceiling
 *   drops to that rate, by half at most each time.
 * - Like TCP's slow start threshold, the ceiling is probed only now and then: the pace holds for
 *   `probeAfterMs`, then grows past the ceiling, slowly at first. A probe that meets a 429 keeps
 *   the ceiling (raised to what the server accepted) and doubles the hold; one that does not finds
 *   a raised limit, or none.
 * - The concurrency stays at its maximum. Halving it on a 429 (AIMD) made no difference in any
 *   measured case, rate or concurrency limit: the pace decides how many requests are in flight.
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
  /** How long the pace holds under the ceiling before probing past it, ms. Default 120 000; doubled after each probe that meets a 429, up to 16 times. */
  probeAfterMs?: number;
  /** Growth of the pace when a probe starts, requests per second per second; it doubles every 5 s of probing. Default 1 % of the ceiling. */
  rateIncreasePerSecond?: number;
}

/** A 429 with the accepted rate this far below the ceiling means the limit itself has changed. */
const LIMIT_CHANGED = 0.9;
/** How much a 429 while holding the pace narrows the headroom, and how fast it widens back (per ms). */
const NOISE_STEP = 0.02;
const NOISE_RECOVERY_PER_MS = NOISE_STEP / 300_000;
/** Lowest ceiling learned, requests per second. */
const MIN_CEILING = 0.05;
/** How long after the first 429 accepted answers still count towards it, ms. */
const FIRST_COUNT_GRACE_MS = 100;
/** The first hold when the first 429 leaves it open whether the limit is on rate or concurrency, ms. */
const SHORT_HOLD_MS = 10_000;
/** Most requests the release-window check looks back over. */
const MAX_WINDOW = 256;

export class RateController {
  private pausedUntil = 0;
  private nextSlot = 0;
  /** Requests per second the server accepts, learned from 429s; undefined until the first. */
  private ceiling: number | undefined;
  /** Headroom lost to noise 429s, and when it was last lost. */
  private noise = { narrowedBy: 0, at: 0 };
  /** The pace starts growing past the ceiling at this time. */
  private probeFrom = 0;
  private readonly firstHoldMs: number;
  private holdMs: number;
  /** The first 429's count, finished when answers still in flight at its time are in. */
  private firstCount: { at: number; until: number } | undefined;
  /** Completion times of successful attempts, oldest first, from `doneHead` on. */
  private done: number[] = [];
  private doneHead = 0;
  /** Release times of recent attempts, oldest first. */
  private released: number[] = [];
  rateLimitedCount = 0;
  /**
   * Called whenever the allowed concurrency changes (the chunk runner resizes its pool). It stays
   * at the maximum for now (see above), but the chunk runner keeps listening.
   */
  onConcurrencyChange: ((n: number) => void) | undefined;

  constructor(private readonly opts: RateControllerOptions) {
    this.firstHoldMs = opts.probeAfterMs ?? 120_000;
    this.holdMs = this.firstHoldMs;
  }

  get concurrency(): number {
    return this.opts.maxConcurrency;
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
    const base = this.ceiling * Math.max(0.5, (this.opts.headroom ?? 0.98) - this.narrowing(now));
    const probing = Math.min(300, Math.max(0, (now - this.probeFrom) / 1000));
    if (probing === 0) return base;
    const growth = this.opts.rateIncreasePerSecond ?? this.ceiling * 0.01;
    // The integral of growth × 2^(t / 5 s) over the probe so far.
    return base + growth * (5 / Math.LN2) * (2 ** (probing / 5) - 1);
  }

  /** Headroom lost to noise 429s and not yet won back. */
  private narrowing(now: number): number {
    return Math.max(0, this.noise.narrowedBy - (now - this.noise.at) * NOISE_RECOVERY_PER_MS);
  }

  /** Waits for the shared pause and for this request's slot under the pace. */
  async beforeAttempt(signal?: AbortSignal): Promise<void> {
    let slot: number | undefined;
    for (;;) {
      const now = this.opts.now();
      if (this.firstCount && now >= Math.max(this.pausedUntil, this.firstCount.until)) this.finishFirstCount();
      if (now < this.pausedUntil) {
        // Also when the pause began while this request waited for its slot: the slot is lost.
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
   * The earliest release that keeps the last ceil(pace) requests over pace's span: a request
   * released late (a busy event loop) must not then bunch with the ones after it.
   */
  private windowOpensAt(pace: number): number {
    const k = Math.min(Math.ceil(pace), MAX_WINDOW, this.released.length);
    if (k === 0) return -Infinity;
    return (this.released[this.released.length - k] as number) + (k * 1000) / pace;
  }

  onRateLimited(retryAfterMs: number | undefined): void {
    const now = this.opts.now();
    this.rateLimitedCount++;
    const duringPause = now < this.pausedUntil;
    this.pausedUntil = Math.max(this.pausedUntil, now + (retryAfterMs ?? 1000));
    this.nextSlot = Math.max(this.nextSlot, this.pausedUntil);
    if (duringPause) return;

    // Over a second, or over four requests when the pace is slower than four a second.
    const pace = this.pace;
    const spanMs = Math.max(1000, pace === undefined ? 0 : 4000 / pace);
    const accepted = this.acceptedRate(now - spanMs, now, spanMs);
    if (this.ceiling === undefined) {
      this.ceiling = Math.max(MIN_CEILING, accepted);
      this.firstCount = { at: now, until: now + FIRST_COUNT_GRACE_MS };
    } else if (now >= this.probeFrom) {
      this.ceiling = Math.max(this.ceiling, accepted);
      this.holdMs = Math.min(this.holdMs * 2, this.firstHoldMs * 16);
    } else if (accepted + 1000 / spanMs < this.ceiling * LIMIT_CHANGED) {
      // A count is one request off either way; and at most halved: a 429 soon after a pause
      // counts over a second that was partly paused.
      this.ceiling = Math.max(MIN_CEILING, accepted, this.ceiling / 2);
    } else {
      this.noise = { narrowedBy: this.narrowing(now) + NOISE_STEP, at: now };
    }
    this.probeFrom = this.pausedUntil + this.holdMs;
  }

  onSuccess(): void {
    const now = this.opts.now();
    this.done.push(now);
    if (this.done.length - this.doneHead > 4096) this.forgetBefore(now - 60_000);
  }

  /** Counts the answers of the first 429's burst that came after its own. */
  private finishFirstCount(): void {
    const { at, until } = this.firstCount as { at: number; until: number };
    this.firstCount = undefined;
    this.ceiling = Math.max(this.ceiling ?? MIN_CEILING, this.acceptedRate(at - 1000, until, 1000));
    // No more accepted than there are workers: the limit may as well be on concurrency, which
    // the count says nothing about; find out soon.
    if (this.ceiling <= this.opts.maxConcurrency) this.probeFrom = Math.min(this.probeFrom, this.pausedUntil + SHORT_HOLD_MS);
  }

  /** Successful attempts completed in (from, to], per second of `spanMs`. */
  private acceptedRate(from: number, to: number, spanMs: number): number {
    this.forgetBefore(Math.min(from, this.firstCount ? this.firstCount.at - 1000 : from));
    let n = 0;
    for (let i = this.done.length - 1; i >= this.doneHead; i--) {
      const t = this.done[i] as number;
      if (t <= from) break;
      if (t <= to) n++;
    }
    return (n * 1000) / spanMs;
  }

  private forgetBefore(t: number): void {
    while (this.doneHead < this.done.length && (this.done[this.doneHead] as number) <= t) this.doneHead++;
    if (this.doneHead > 1024) {
      this.done = this.done.slice(this.doneHead);
      this.doneHead = 0;
    }
  }
}
