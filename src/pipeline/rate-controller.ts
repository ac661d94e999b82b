/**
 * Shared rate control for all workers of a run (issue 14): one pause per burst of 429s, a pace
 * lowered only on evidence and probed past once it has held, a concurrency lowered when 429s point
 * at a limit in flight, rate-limit headers acted on before a 429. docs/design.md "Rate control".
 */
import type { Sleep } from '../util/sleep.js';
import type { RateLimitHint } from './rate-limit-headers.js';
import { AnswerHistory } from './answer-history.js';
import { InFlight, type AttemptSlot } from './in-flight.js';

export type { AttemptSlot } from './in-flight.js';

export interface RateControllerOptions {
  maxConcurrency: number;
  now: () => number;
  sleep: Sleep;
  /** Fixed upper bound on requests per second (config `maxRequestsPerSecond`), if any. */
  maxRequestsPerSecond?: number;
  /** Receives what each burst of 429s was judged to say (the run's debug log). */
  log?: (fields: Record<string, unknown>) => void;
}

/** Share of the learned ceiling that is paced at. */
const HEADROOM = 0.98;
/** The unit of the holds before probing past a ceiling (4 of them after a burst that moved it), ms. */
const FIRST_HOLD_MS = 2_000;
/** The longest hold, reached by bursts that keep finding the same ceiling, ms. */
const MAX_HOLD_MS = 40_000;

/** An accepted rate this far from the ceiling means the limit has moved (either way). */
const MOVED = 0.9;
/** Lowest ceiling learned, requests per second. */
const MIN_CEILING = 0.05;
/** Answers accepted this long after a burst's first 429 still count towards it (a 429 has no body and can overtake them), ms. */
const GRACE_MS = 100;
/** Probe growth: the pace is base + PROBE_GROWTH × t³ × the highest pace learned, t in seconds of probing. */
const PROBE_GROWTH = 0.02;
const MAX_PROBE_SECONDS = 30;
/** A burst met with more requests in flight than this share of recent accepted answers had points at a concurrency limit. */
const CONCURRENCY_SHARE = 0.1;
/** What a 429 at the pace (not probing) leaves of the ceiling... */
const NOISE_TRIM = 0.98;
/** ...and what one leaves when another came at the pace within AT_PACE_AGAIN_MS: the pace is too close to the limit. */
const AGAIN_TRIM = 0.93;
const AT_PACE_AGAIN_MS = 10_000;
/** A lower limit needs at least this share of 429s among the last answers (ANSWERS, answer-history.ts). */
const REFUSED_SHARE = 0.06;
/** Bursts whose count was taken partly while not sending (paused, or before the first request) need this many to agree... */
const WEAK_BURSTS = 3;
/** ...or this share of 429s among the last STRONG_ANSWERS answers (3 in 10: a 4 % stray background gives that once in 150 tries). */
const STRONG_SHARE = 0.3;
const STRONG_ANSWERS = 10;
/** A lower limit is believed when a second burst within this long agrees with the first, ms... */
const CONFIRM_MS = 15_000;
/** ...to within this share. */
const AGREE = 0.25;
/** Most requests the release-window check looks back over. */
const MAX_WINDOW = 256;

/** The least of the rates given, undefined when none is. */
function least(...rates: Array<number | undefined>): number | undefined {
  const given = rates.filter((r) => r !== undefined);
  return given.length ? Math.min(...given) : undefined;
}

interface Burst {
  /** When its first 429 came back. */
  at: number;
  count: number;
  /** Requests in flight when the first 429 came back, itself included. */
  inFlight: number;
  /** The share of the accepted answers of the 2 s before it that came with as many requests in flight. */
  acceptedAsMany: number;
  /** Its first Retry-After was an HTTP date: the retry is rounded up to a whole second of the clock. */
  date: boolean;
}

export class RateController {
  private pausedUntil = 0;
  private readonly history = new AnswerHistory();
  private pausedTotal = 0;
  private nextSlot = 0;
  /** Requests per second the server accepts, learned from 429s; undefined until the first. */
  private ceiling: number | undefined;
  private holdMs = FIRST_HOLD_MS;
  /** The pace starts growing past the ceiling at this time. */
  private probeFrom = 0;
  /** The highest ceiling learned in the run: how far a probe from a lower one may have to go. */
  private peakCeiling = 0;
  /** When the last 429 at the pace (not probing) came. */
  private lastAtPace = -Infinity;
  private burst: Burst | undefined;
  /** A burst that pointed at a lower limit, waiting for a second one to agree. */
  private candidate: { at: number; rate: number; bursts: number; strong: boolean } | undefined;
  /** The ceiling is a trial: one window paced at a first burst's count, then probed past it (see judge). */
  private trial = false;
  /** When the first attempt was let go (the time before it is not a time of sending). */
  private firstRelease: number | undefined;
  /** Release times of recent attempts, oldest first. */
  private released: number[] = [];
  private readonly flight = new InFlight();
  /** The quota the rate-limit headers state (their Limit), once it has run out. */
  private headerLimit: number | undefined;
  /** The quota's window: the longest reset seen, whole seconds rounded down, at least 1 s. */
  private headerWindowMs = 1000;
  /** Attempts waiting for one in flight to end (or for the allowed concurrency to grow). */
  private cap: number;
  /** The lowest concurrency the last concurrency burst showed to be refused (one above what it allowed). */
  private capCeiling: number | undefined;
  private capHoldMs = FIRST_HOLD_MS;
  private capProbeFrom = 0;
  private capChangedAt = -Infinity;
  /** Called whenever the allowed concurrency changes (the chunk runner resizes its pool). */
  onConcurrencyChange: ((n: number) => void) | undefined;

  constructor(private readonly opts: RateControllerOptions) {
    this.cap = opts.maxConcurrency;
  }

  /** Requests allowed in flight now. */
  get concurrency(): number {
    return this.cap;
  }

  /** The pace in force, requests per second (undefined: unpaced). */
  get pace(): number | undefined {
    return least(this.learnedPace(this.opts.now()), this.headerPace, this.opts.maxRequestsPerSecond);
  }

  /** The pace learned from 429s (the last one reached, with no probe growth) or from rate-limit headers, or null when never limited. */
  get learnedRate(): number | null {
    return least(this.ceiling === undefined ? undefined : this.ceiling * HEADROOM, this.headerPace) ?? null;
  }

  /** HEADROOM × the quota the headers stated over its window, once it ran out. */
  private get headerPace(): number | undefined {
    return this.headerLimit === undefined ? undefined : ((this.headerLimit * 1000) / this.headerWindowMs) * HEADROOM;
  }

  /** Time all workers spent held by pauses (Retry-After, or headers saying nothing is left), ms. */
  get pausedMs(): number {
    return this.pausedTotal - Math.max(0, this.pausedUntil - this.opts.now());
  }

  private learnedPace(now: number): number | undefined {
    if (this.ceiling === undefined || this.trialOver(now)) return undefined;
    const base = this.ceiling * HEADROOM;
    // A trial doubles the pace in its second second; no 429 by then: the first burst was a stray.
    if (this.trial) return base * 2 ** Math.max(0, (now - this.probeFrom) / 1000);
    const t = Math.min(MAX_PROBE_SECONDS, Math.max(0, (now - this.probeFrom) / 1000));
    // Scaled by the highest ceiling learned: from a fall to a fifth (a shared quota), a probe scaled by
    // the low ceiling took 6 s to find the room that came back (bench R3).
    return base + PROBE_GROWTH * t ** 3 * Math.max(this.ceiling, this.peakCeiling) * HEADROOM;
  }

  /** Requests in flight now (attempts let go whose slot is not yet released). */
  get attemptsInFlight(): number {
    return this.flight.count;
  }

  /** Waits for the shared pause, a place in flight and a slot under the pace; release the slot returned (AttemptSlot). */
  async beforeAttempt(signal?: AbortSignal): Promise<AttemptSlot> {
    let slot: number | undefined;
    let pacedWait = false;
    for (;;) {
      const now = this.opts.now();
      if (this.burst && now >= this.pausedUntil) this.judge(this.burst);
      if (this.trialOver(now)) this.endTrial();
      if (now < this.pausedUntil) {
        // Also when the pause began while this request waited for its slot: the slot is lost.
        slot = undefined;
        await this.opts.sleep(this.pausedUntil - now, signal);
        continue;
      }
      if (this.flight.count >= this.cap) {
        // A worker running when the allowed concurrency fell (its retry after a 429) waits here.
        slot = undefined;
        await this.flight.freed(signal);
        continue;
      }
      const pace = this.pace;
      if (pace !== undefined && slot === undefined) {
        // Reserve the slot before sleeping so concurrent callers queue behind it.
        slot = Math.max(this.nextSlot, now);
        this.nextSlot = slot + 1000 / pace;
      }
      const at = pace === undefined ? now : Math.max(slot as number, this.windowOpensAt(pace), this.quotaOpensAt());
      if (at <= now) {
        this.released.push(now);
        this.firstRelease ??= now;
        if (this.released.length > 2 * MAX_WINDOW) this.released.splice(0, this.released.length - MAX_WINDOW);
        const taken = this.flight.take();
        if (!pacedWait) this.poolBound(now);
        return taken;
      }
      pacedWait = true;
      await this.opts.sleep(at - now, signal);
    }
  }

  /** The earliest release keeping the last ceil(pace) requests over pace's span: one released late must not bunch with the next. */
  private windowOpensAt(pace: number): number {
    const k = Math.min(Math.ceil(pace), MAX_WINDOW, this.released.length);
    if (k === 0) return -Infinity;
    return (this.released[this.released.length - k] as number) + (k * 1000) / pace;
  }

  /**
   * Under a quota the headers stated, the earliest release keeping our last Limit requests over the
   * window (with the headroom's margin): a fixed window has reset by then as well as a sliding one.
   */
  private quotaOpensAt(): number {
    const limit = this.headerLimit;
    if (limit === undefined || limit > MAX_WINDOW || this.released.length < limit) return -Infinity;
    return (this.released[this.released.length - limit] as number) + this.headerWindowMs / HEADROOM;
  }

  /** A request went out without waiting for the pace: the pool is what holds the run back. */
  private poolBound(now: number): void {
    if (this.cap >= this.opts.maxConcurrency || this.flight.count < this.cap || now < this.pausedUntil) return;
    if (now - this.capChangedAt < 1000) return;
    if (this.capCeiling !== undefined && this.cap + 1 >= this.capCeiling) {
      // Back at the concurrency that met 429s: try it again only when its hold is over.
      if (now < this.capProbeFrom) return;
      if (this.cap + 1 > this.capCeiling) this.capCeiling = undefined; // it held: the limit was raised
    }
    this.setCap(this.cap + 1, now);
  }

  private setCap(n: number, now: number): void {
    const next = Math.max(1, Math.min(this.opts.maxConcurrency, n));
    if (next === this.cap) return;
    this.cap = next;
    this.capChangedAt = now;
    this.onConcurrencyChange?.(next);
    this.flight.wake();
  }

  /** The server answered 429 (call before releasing the attempt's slot). */
  onRateLimited(retryAfterMs: number | undefined, retryAfterIsDate = false): void {
    const now = this.opts.now();
    this.history.refused();
    const inFlight = this.flight.count;
    if (this.burst) this.burst.count++;
    else this.burst = { at: now, count: 1, inFlight, acceptedAsMany: this.history.acceptedAsMany(now, inFlight), date: retryAfterIsDate };
    this.pauseUntil(now, now + (retryAfterMs ?? 1000));
  }

  /** An attempt was answered and accepted (call before releasing its slot). */
  onSuccess(): void {
    this.history.accepted(this.opts.now(), this.flight.count);
  }

  /**
   * Rate-limit headers of an answer (call before onSuccess/onRateLimited). Once the requests in
   * flight will take what is left, a stated Limit paces at Limit over its window; every worker waits
   * for the reset only when others used the quota up or no Limit is stated: a reset stated to the
   * second is up to a second late, and pausing each time cost a third to a half of it (bench R6).
   */
  onRateLimitHint(h: RateLimitHint): void {
    const now = this.opts.now();
    if (!(h.resetMs >= 0) || !(h.remaining >= 0)) return;
    const limit = h.limit !== undefined && Number.isInteger(h.limit) && h.limit >= 1 ? h.limit : undefined;
    if (limit !== undefined) this.headerWindowMs = Math.max(this.headerWindowMs, Math.floor(h.resetMs / 1000) * 1000);
    // A learned quota follows the Limit stated now: paced at a Limit, it never runs out again.
    if (limit !== undefined && this.headerLimit !== undefined) this.headerLimit = limit;
    const others = Math.max(0, this.flight.count - 1);
    if (h.remaining - others >= 1) return;
    if (limit !== undefined) {
      this.headerLimit = limit;
      // Ours released within the window (those in flight included) against what the server counts.
      let ours = 0;
      for (let i = this.released.length - 1; i >= 0 && (this.released[i] as number) > now - this.headerWindowMs; i--) ours++;
      if (limit <= MAX_WINDOW && limit - h.remaining <= ours + 1) return;
    }
    if (h.resetMs > 0) this.pauseUntil(now, now + h.resetMs);
  }

  private pauseUntil(now: number, until: number): void {
    if (until <= this.pausedUntil) return;
    this.history.paused(now, until, now < this.pausedUntil);
    this.pausedTotal += until - Math.max(now, this.pausedUntil);
    this.pausedUntil = until;
    this.nextSlot = Math.max(this.nextSlot, until);
  }

  private trialOver(now: number): boolean {
    return this.trial && now >= this.probeFrom + 1000;
  }

  private endTrial(): void {
    this.trial = false;
    this.ceiling = undefined;
    this.peakCeiling = 0;
  }

  /** A burst of 429s is over: what does it say about the limit? */
  private judge(b: Burst): void {
    this.burst = undefined;
    const now = this.opts.now();
    this.history.forget(now);
    if (this.trialOver(b.at)) this.endTrial();
    if (b.inFlight > 1 && b.acceptedAsMany < CONCURRENCY_SHARE) {
      this.concurrencyBurst(b, now);
      return;
    }
    const pace = this.learnedPace(b.at);
    // A 429 during a trial ends it: the limit is there (confirmed below when it counts the same).
    const trial = this.trial;
    this.trial = false;
    const spanMs = pace !== undefined && pace < 2 ? 4000 / pace : 1000;
    // Accepted in the span before the burst (and the answers its first 429 overtook): one request off either way.
    const n = this.history.acceptedWithin(b.at - spanMs, b.at + GRACE_MS);
    const accepted = (n * 1000) / spanMs;
    const slack = 1000 / spanMs;
    const probing = this.ceiling !== undefined && pace !== undefined && pace > this.ceiling;
    let weak = false;
    if (this.ceiling === undefined || accepted < this.ceiling * MOVED) {
      // A (lower) limit is believed only when a second burst agrees and 429s are no rarity among the
      // last answers; at most halved. A count over a span spent partly paused (or before the run) is
      // low whatever the limit: such weak bursts must agree three times, or come with 3 429s in the
      // last 10 answers (bench R1: two agreed by chance and walked the pace down to a fifth).
      weak = this.history.idleMs(b.at - spanMs, b.at, this.firstRelease) > spanMs * (1 - MOVED);
      const c = this.candidate;
      const agreed = c && b.at - c.at <= CONFIRM_MS && Math.abs(accepted - c.rate) <= AGREE * Math.max(accepted, c.rate) + slack;
      const bursts = agreed ? c.bursts + 1 : 1;
      const strong = !weak || (agreed === true && c.strong);
      const share = this.history.refusedShare();
      // Two weak bursts that counted the same, with no busier second since the first (before any
      // ceiling: in the run): a quota refuses at its count every time, strays seldom agree so (bench
      // R6: one request in flight, so the full-window rule never fires; a third burst cost up to 2 s).
      const twin = agreed === true && accepted === (c as { rate: number }).rate &&
        accepted >= this.history.peakRate(b.at, this.ceiling === undefined ? -Infinity : (c as { at: number }).at);
      // Three weak bursts set the first ceiling only near the busiest second seen: strays after pauses
      // agreed at 4 to 20 a second when 70 went through (bench R1: over budget in 8 of 80 seeds, 3 with this).
      const three = bursts >= WEAK_BURSTS && (this.ceiling !== undefined || accepted >= MOVED * this.history.peakRate(b.at));
      const enough = strong || twin || three || this.history.refusedShare(STRONG_ANSWERS) >= STRONG_SHARE;
      // Every request in flight at the first 429 refused: a full window (strays come one at a time).
      const full = b.inFlight >= 2 && b.count >= b.inFlight;
      if ((agreed && share >= REFUSED_SHARE && enough) || full) {
        const fell = this.ceiling !== undefined;
        this.ceiling = Math.max(MIN_CEILING, accepted, this.ceiling === undefined ? 0.75 * this.history.peakRate(b.at) : this.ceiling / 2);
        // A fall held up by the halving (10 -> 4.9 when the bursts said 4): the evidence stands, and
        // the next burst that agrees lowers the pace at once (bench R4). Not for a first ceiling:
        // strays after pauses read low and agree by chance (bench R1).
        this.candidate = fell && accepted < this.ceiling * MOVED ? { at: b.at, rate: accepted, bursts, strong: true } : undefined;
        // Strong evidence: a limit that just fell is not probed again at once.
        this.hold(FIRST_HOLD_MS * 4);
        this.peakCeiling = Math.max(this.peakCeiling, this.ceiling);
      } else {
        this.candidate = agreed ? { at: b.at, rate: accepted, bursts, strong } : { at: b.at, rate: accepted, bursts: 1, strong: !weak };
        // Not believed yet, but a second 429 at the pace soon after another: less headroom.
        if (this.ceiling !== undefined && !probing && this.atPaceAgain(b.at)) this.ceiling = Math.max(MIN_CEILING, this.ceiling * AGAIN_TRIM);
        // A first burst (after the trim, which it must not record) with one request in flight and an
        // HTTP-date Retry-After: sent again all at once, the next window is refused too, its date a
        // whole second later. A trial instead: one window paced at this count, then faster; its 429's
        // date is the next whole second (bench R6: 0.4–1 s of pause instead of 2 s).
        if (this.ceiling === undefined && b.date && b.inFlight === 1) {
          this.ceiling = this.peakCeiling = Math.max(MIN_CEILING, accepted);
          this.trial = true;
          this.probeFrom = this.pausedUntil + 1000;
        }
      }
    } else if (accepted - slack > this.ceiling / MOVED && probing) {
      // A probe found room above the old ceiling, measured as a fall's: the same hold follows (a
      // probe 2 s later paused once more at the limit just found, bench R3 and R4).
      this.ceiling = accepted;
      this.peakCeiling = Math.max(this.peakCeiling, this.ceiling);
      this.hold(FIRST_HOLD_MS * 4);
      this.candidate = undefined;
    } else if (probing) {
      // A probe met the same ceiling again: stronger evidence, a longer hold (a trial's: a first ceiling's).
      this.hold(trial ? FIRST_HOLD_MS * 4 : this.holdMs * 2);
      this.candidate = undefined;
    } else {
      // At the ceiling, not probing: timing noise or a stray; a little less headroom, more when
      // another came at the pace within 10 s (a shared quota whose other client bunches, bench R3).
      this.ceiling = Math.max(MIN_CEILING, this.ceiling * (this.atPaceAgain(b.at) ? AGAIN_TRIM : NOISE_TRIM));
    }
    this.opts.log?.({
      accepted, weak, ceiling: this.ceiling ?? null, holdMs: this.holdMs, probing, refused: b.count, inFlight: b.inFlight,
    });
  }

  /** Holds the pace for `ms` (at most MAX_HOLD_MS) after the pause before probing past it. */
  private hold(ms: number): void {
    this.holdMs = Math.min(MAX_HOLD_MS, ms);
    this.probeFrom = this.pausedUntil + this.holdMs;
  }

  /** Records a 429 at the pace; true when another came at the pace within AT_PACE_AGAIN_MS before it. */
  private atPaceAgain(at: number): boolean {
    const again = at - this.lastAtPace < AT_PACE_AGAIN_MS;
    this.lastAtPace = at;
    return again;
  }

  private concurrencyBurst(b: Burst, now: number): void {
    // The requests in flight that were not refused are what the server allows.
    const allowed = Math.max(1, b.inFlight - b.count);
    // A concurrency limit rarely moves: the first hold is a fall's, twice that when several were refused at once.
    const firstHold = FIRST_HOLD_MS * (b.count >= 2 ? 8 : 4);
    this.capHoldMs = this.capCeiling !== undefined && b.inFlight >= this.capCeiling ? Math.min(MAX_HOLD_MS, this.capHoldMs * 2) : Math.min(MAX_HOLD_MS, firstHold);
    // Every request above `allowed` was refused: one more is known to be too many (4 in flight with
    // 2 refused used to be probed again at 3 a second later, one more pause).
    this.capCeiling = allowed + 1;
    this.capProbeFrom = this.pausedUntil + this.capHoldMs;
    this.setCap(Math.min(this.cap, allowed), now);
    this.opts.log?.({ concurrency: this.cap, refused: b.count, inFlight: b.inFlight, holdMs: this.capHoldMs });
  }
}
