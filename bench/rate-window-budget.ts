/**
 * A candidate model for issue 41, measured on the rate family and NOT used by the pipeline
 * (src/pipeline/rate-controller.ts is). Over 500 seeds it meets every goal on the servers with
 * rate-limit headers and beats today's controller on every figure without them, where it still
 * misses three goals (the 429 share, the stray bound, one lowered pool not raised again); put in
 * place of today's controller it fails 24 of the 71 tests of test/pipeline/rate-controller.test.ts
 * (docs/benchmarks.md, "A window-budget model"; its third round splits the 429s without headers by
 * cause and measures what was tried against them).
 * `RATE_FAMILY_CONTROLLER=window-budget npm run bench -- --only rate-family` measures it.
 *
 * One model, a window budget. The server counts our requests over a window W. The client mirrors
 * that count: an attempt is let go only while fewer than `limit` of ours went out in the last W + s
 * (s, the spread of the time out: however their latency falls, no more than `limit` arrive within
 * any W), and no sooner than (W + s) / limit after the last one (a long window is not spent in one
 * burst). Before anything is learned the run is not paced.
 *
 * - **Where the limit comes from.** A stated Limit (`RateLimit-*` / `X-RateLimit-*`) is the limit, at
 *   once, whenever it changes; W is the longest reset stated (whole seconds). Otherwise a 429 does:
 *   once the answers in flight with it are in, the accepted answers the server saw in the W before
 *   it are the delivered count (BBR's delivery rate over the server's window). W grows to the
 *   Retry-After of a window seen full.
 * - **Which 429 is the quota's.** Not one whose headers state quota left. One that refused every
 *   request reaching the server after it (a full window: strays come one at a time) is believed at
 *   once; one below the pace only when another follows within two windows at the same count (a
 *   lowered quota refuses again at the same count; strays at random ones). A count over a window
 *   spent mostly paused is not used. A 429 met with the budget spent is timing: the budget holds.
 * - **Probing.** Once the budget has let through PROBE_EVERY requests since it was set (at least
 *   two windows), and while it is what holds the run back, it grows by 1, 3, 7, 15… a window until a
 *   429 at or above the limit measures the new one: a raised quota is found in a few windows, a
 *   fixed one costs one 429 in PROBE_EVERY requests (half of the 5 % the 429s may take). Past that
 *   first hold a probe waits half as long as the limit has stood, at most MAX_HOLD_MS.
 * - **Pausing.** A 429 below the pace pauses every worker until it is judged (a round trip), and for
 *   the rest of its Retry-After only if it was the quota's: a stray costs a round trip. A stated
 *   Remaining used up by requests other than ours pauses them until the reset.
 * - **Concurrency.** A 429 met with more requests in flight than any recent accepted answer had,
 *   and again, points at a limit in flight (a full window does not: it is the quota's, and a limit in
 *   flight lets those in flight through): the pool drops to those not refused,
 *   and after the hold of a probe grows by one whenever it is full and an answer is accepted.
 */
import type { Sleep } from '../src/util/sleep.js';
import type { RateLimitHint } from '../src/pipeline/rate-limit-headers.js';

export interface WindowBudgetOptions {
  maxConcurrency: number;
  now: () => number;
  sleep: Sleep;
  /** Fixed upper bound on requests per second (config `maxRequestsPerSecond`), if any. */
  maxRequestsPerSecond?: number;
  /** Receives what each 429 was judged to say (for the run's debug log). */
  log?: (fields: Record<string, unknown>) => void;
}

/** An attempt's place in flight, from beforeAttempt: release it once the attempt has ended, however it ended. Twice is harmless. */
interface AttemptSlot {
  release(): void;
}

/** One probe's 429 in this many requests: 2.5 %, half of what the 429s may take (issue 41). */
const PROBE_EVERY = 40;
/**
 * Past its first hold, a probe waits half as long as the limit has stood (a limit that held for a
 * minute is less likely to move in the next second than one just learned), at most MAX_HOLD_MS
 * (issue 14: a raised limit found within a minute).
 */
const AGE = 0.5;
const MAX_HOLD_MS = 40_000;
/** How long answers are remembered, ms. */
const MEMORY_MS = 30_000;

interface Answer { sent: number; seen: number; ok: boolean; inFlight: number }
interface Refusal { sent: number | undefined; at: number; refused: number; inFlight: number; retryMs: number; atPace: boolean; probing: boolean; quotaLeft: boolean }

export class WindowBudgetController {
  private pausedUntil = 0;
  private pauses: Array<{ from: number; until: number }> = [];
  private pausedTotal = 0;
  private firstRelease: number | undefined;
  private nextSlot = 0;
  private windowMs = 1000;
  /** Requests per window learned (from 429s or a stated Limit); undefined: not paced. */
  private limit: number | undefined;
  /** The highest limit learned in the run. */
  private peak = 0;
  /** When the limit last changed value. */
  private since = 0;
  private stated: number | undefined;
  private probe = { from: Infinity, extra: 0, stepAt: 0 };
  private suspect: { until: number; count: number } | undefined;
  private capSuspect: { until: number; inFlight: number } | undefined;
  /** The Remaining stated with the answer being handled, if any. */
  private remaining: { at: number; n: number } | undefined;
  private pending: Refusal | undefined;
  private answers: Answer[] = [];
  private released: number[] = [];
  private inFlight = 0;
  private outcome: { ok: boolean } | undefined;
  private waiters = new Set<() => void>();
  private cap: number;
  private slowStart = true;
  private capHold = { at: Infinity, ms: 0 };
  /** Called whenever the allowed concurrency changes (the chunk runner resizes its pool). */
  onConcurrencyChange: ((n: number) => void) | undefined;

  constructor(private readonly opts: WindowBudgetOptions) {
    // Slow start (as TCP's): one in flight, one more for each answer accepted, until the first 429.
    this.cap = Math.min(1, opts.maxConcurrency);
  }

  /** Requests allowed in flight now. */
  get concurrency(): number {
    return this.cap;
  }

  /** Requests in flight now (attempts let go whose slot is not yet released). */
  get attemptsInFlight(): number {
    return this.inFlight;
  }

  /** The pace in force, requests per second (undefined: unpaced). */
  get pace(): number | undefined {
    const b = this.budget();
    const learned = b === undefined ? undefined : (b * 1000) / this.spanMs();
    const m = this.opts.maxRequestsPerSecond;
    return m === undefined ? learned : Math.min(m, learned ?? Infinity);
  }

  /** For the family's diagnostic: no limit learned yet, a probe's growth in the budget, or neither. */
  get phase(): 'learning' | 'probing' | 'steady' {
    return !this.diag.settled ? 'learning' : this.probe.extra > 0 || this.diag.probedUp ? 'probing' : 'steady';
  }

  /** For `phase`: a limit has held until a probe's time (learning is over); the limit stands where a probe raised it. */
  private diag = { settled: false, probedUp: false };

  /** The pace learned (without a probe's growth), requests per second, or null when never limited. */
  get learnedRate(): number | null {
    return this.limit === undefined ? null : (this.limit * 1000) / this.spanMs();
  }

  /** Time all workers spent held by pauses (Retry-After, or headers saying nothing is left), ms. */
  get pausedMs(): number {
    return this.pausedTotal - Math.max(0, this.pausedUntil - this.opts.now());
  }

  /** Waits for the pause, for room in flight and in the window budget; release the slot returned when the attempt ends. */
  async beforeAttempt(signal?: AbortSignal): Promise<AttemptSlot> {
    let slot: number | undefined;
    for (;;) {
      const now = this.opts.now();
      if (this.pending && now >= this.judgeAt(this.pending)) this.judge(this.pending);
      if (now < this.pausedUntil) {
        slot = undefined;
        await this.opts.sleep(this.pausedUntil - now, signal);
      } else if (this.inFlight >= this.cap) {
        slot = undefined;
        await this.freed(signal);
      } else {
        const m = this.opts.maxRequestsPerSecond;
        if (m !== undefined && slot === undefined) this.nextSlot = (slot = Math.max(this.nextSlot, now)) + 1000 / m;
        const at = Math.max(slot ?? now, this.budgetOpensAt(now));
        if (at <= now) return this.let(now);
        await this.opts.sleep(at - now, signal);
      }
    }
  }

  private let(now: number): AttemptSlot {
    this.firstRelease ??= now;
    this.released.push(now);
    if (this.released.length > 4096) this.released.splice(0, 2048);
    const inFlight = ++this.inFlight;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.inFlight--;
        const t = this.opts.now();
        if (this.outcome) this.answers.push({ sent: now, seen: (now + t) / 2, ok: this.outcome.ok, inFlight });
        if (this.outcome?.ok === false && this.pending && this.pending.sent === undefined) {
          // When the server saw it: no later than its answer (a 429 often comes back at once).
          Object.assign(this.pending, { sent: now, inFlight });
        }
        this.outcome = undefined;
        for (const w of [...this.waiters]) w();
      },
    };
  }

  private freed(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => (this.waiters.delete(wake), reject(signal?.reason));
      const wake = () => (this.waiters.delete(wake), signal?.removeEventListener('abort', onAbort), resolve());
      this.waiters.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The window the budget counts over: W and the spread of the time out. */
  private spanMs(): number {
    let lo = Infinity;
    let hi = 0;
    for (const a of this.answers.slice(-64)) if (a.ok) (lo = Math.min(lo, a.seen - a.sent)), (hi = Math.max(hi, a.seen - a.sent));
    return this.windowMs + Math.max(0, hi - lo);
  }

  /** Requests a window allowed now: the limit, a probe's growth, at most a stated Limit. */
  private budget(): number | undefined {
    if (this.limit === undefined) return undefined;
    return Math.min(this.limit + this.probe.extra, this.stated ?? Infinity);
  }

  private budgetOpensAt(now: number): number {
    const b = this.budget();
    if (b === undefined) return now;
    const span = this.spanMs();
    const n = this.released.length;
    // No more than b in any span, and spaced evenly: a long window is not spent in one burst.
    const at = Math.max(n < b ? now : (this.released[n - b] as number) + span, n ? (this.released[n - 1] as number) + span / b : now);
    // Held back by the budget: a probe's time has come, or the next step of one that met no 429.
    if (at > now && now >= this.probe.from && now >= this.probe.stepAt) {
      this.diag = { settled: true, probedUp: false };
      this.probe.extra = 2 * this.probe.extra + 1;
      this.probe.stepAt = now + span;
      return this.budgetOpensAt(now);
    }
    return at;
  }

  private setLimit(limit: number, now: number): void {
    const next = Math.max(1, Math.floor(limit));
    if (next !== this.limit) this.since = now;
    this.limit = next;
    this.peak = Math.max(this.peak, this.limit);
    this.probe = { from: Math.max(now, this.pausedUntil) + this.holdMs(now), extra: 0, stepAt: 0 };
  }

  /** The hold before a probe: two windows, or the time the budget takes to let PROBE_EVERY through. */
  private holdMs(now: number): number {
    const span = this.spanMs();
    // PROBE_EVERY requests at the highest limit learned: a limit that fell (another client's share, a
    // quota lowered for a while) is looked past as often as the one before it, as it may come back.
    const base = Math.max(2 * span, (PROBE_EVERY * span) / Math.max(this.peak, this.limit ?? PROBE_EVERY));
    return Math.max(base, Math.min(MAX_HOLD_MS, AGE * (now - this.since)));
  }

  /** The server answered 429 (call before releasing the attempt's slot). */
  onRateLimited(retryAfterMs: number | undefined, _retryAfterIsDate = false): void {
    const now = this.opts.now();
    this.outcome = { ok: false };
    // Slow start ends; the pool grows on while it is full, unless a limit in flight is found.
    if (this.slowStart) this.capHold.at = now;
    this.slowStart = false;
    const retryMs = retryAfterMs ?? 1000;
    if (this.pending && now >= this.judgeAt(this.pending)) this.judge(this.pending);
    // A probe's 429, or one met with the budget spent: the budget already holds the run back.
    const b = this.budget();
    const probing = this.probe.extra > 0;
    const atPace = b !== undefined && this.released.filter((t) => t > now - this.spanMs()).length >= b - 1;
    // A probe stops growing until its 429 is judged.
    if (probing) this.probe.stepAt = Infinity;
    // Headers that say quota is left: not the quota's 429 (a stray, or a limit in flight).
    const quotaLeft = this.remaining !== undefined && this.remaining.at === now && this.remaining.n >= 1;
    if (this.pending) this.pending.refused++;
    else this.pending = { sent: undefined, at: now, refused: 1, inFlight: this.inFlight, retryMs, atPace, probing, quotaLeft };
    // The others wait until it is judged (the answers in flight with it are in), then for the rest of its
    // Retry-After only if it was the quota's: a stray costs a round trip, not its Retry-After.
    if (!probing && !atPace) this.pauseUntil(now, this.judgeAt(this.pending));
  }

  /** An attempt was answered and accepted (call before releasing its slot). */
  onSuccess(): void {
    const now = this.opts.now();
    this.outcome = { ok: true };
    if (this.answers.length > 8192) this.answers = this.answers.filter((a) => a.seen > now - MEMORY_MS);
    // The pool is full and its hold is over: one more in flight.
    if ((this.slowStart || (this.inFlight >= this.cap && now >= this.capHold.at)) && this.cap < this.opts.maxConcurrency) this.setCap(this.cap + 1);
  }

  /**
   * Rate-limit headers of an answer (call before onSuccess/onRateLimited). A stated Limit is the
   * limit over the longest reset seen; a Remaining that ours in flight and in the window do not
   * account for (another client took the quota, or no Limit is stated) pauses until the reset.
   */
  onRateLimitHint(h: RateLimitHint): void {
    const now = this.opts.now();
    if (!(h.resetMs >= 0) || !(h.remaining >= 0)) return;
    this.remaining = { at: now, n: h.remaining };
    const limit = h.limit !== undefined && Number.isInteger(h.limit) && h.limit >= 1 ? h.limit : undefined;
    if (limit !== undefined) {
      this.windowMs = Math.max(this.windowMs, Math.floor(h.resetMs / 1000) * 1000);
      if (limit !== this.stated) this.setLimit(limit, now);
      this.stated = limit;
    }
    if (h.remaining - Math.max(0, this.inFlight - 1) >= 1) return;
    if (limit !== undefined) {
      let ours = 0;
      for (let i = this.released.length - 1; i >= 0 && (this.released[i] as number) > now - this.windowMs; i--) ours++;
      if (limit - h.remaining <= ours + 1) return;
    }
    if (h.resetMs > 0) this.pauseUntil(now, now + h.resetMs);
  }

  private pauseUntil(now: number, until: number): void {
    if (until <= this.pausedUntil) return;
    if (now >= this.pausedUntil) this.pauses.push({ from: now, until });
    else (this.pauses.at(-1) as { until: number }).until = until;
    this.pausedTotal += until - Math.max(now, this.pausedUntil);
    this.pausedUntil = until;
    if (this.pauses.length > 256) this.pauses.splice(0, 128);
  }

  /** A refusal is judged once every request in flight with it has been answered. */
  private judgeAt(p: Refusal): number {
    let rtt = 0;
    for (const a of this.answers.slice(-64)) if (a.ok) rtt = Math.max(rtt, 2 * (a.seen - a.sent));
    // No round trip seen yet: those in flight since the first went out.
    return p.at + (rtt || p.at - (this.firstRelease ?? p.at));
  }

  /** What a 429 (and those that came with it) says about the limit. */
  private judge(p: Refusal): void {
    this.pending = undefined;
    const now = this.opts.now();
    const recent = this.answers.filter((a) => a.ok && a.seen > p.at - 2000 && a.seen <= p.at);
    const w = this.windowMs;
    // Those the server saw before it: their time out is known to within its spread.
    const spread = this.spanMs() - w;
    // Every request that reached the server after it was refused too (strays come one at a time).
    const full = p.refused >= 2 && !this.answers.some((a) => a.ok && a.seen > p.at + spread);
    // Refused with more in flight than any accepted answer had, and again (or several at once): a limit in flight.
    if (p.inFlight > 1 && recent.length && recent.every((a) => a.inFlight < p.inFlight)) {
      const again = this.capSuspect !== undefined && now <= this.capSuspect.until && p.inFlight >= this.capSuspect.inFlight;
      this.capSuspect = { until: Math.max(now, this.pausedUntil) + 2 * this.spanMs(), inFlight: p.inFlight };
      // A full window is the quota's (a limit in flight lets those in flight through); twice is a limit in flight.
      if (!full && again) return this.pauseUntil(now, p.at + p.retryMs), this.concurrencyLimit(p);
    }
    if (p.quotaLeft) {
      if (p.probing) this.probe.stepAt = now;
      return this.opts.log?.({ verdict: 'quota left: not the quota' });
    }
    const count = this.answers.filter((a) => a.ok && a.seen > p.at - w && a.seen <= p.at + spread).length;
    const log = (verdict: string) => this.opts.log?.({ verdict, count, limit: this.limit ?? null, windowMs: w, refused: p.refused });
    if (p.probing && count >= (this.limit ?? 0)) {
      // The probe met the limit: the count is what the window holds (more than before: room found).
      if (count > (this.limit ?? 0)) this.diag.probedUp = true;
      this.setLimit(Math.max(count, this.limit ?? 0), now);
      return log('a probe met the limit');
    }
    if (p.probing) this.probe.stepAt = now;
    // A count over a window spent mostly paused says what was sent, not what the server takes.
    if (!full && this.idleMs(p.at - w, p.at) > w / 2) return log('no count: paused');
    // Again, at the same count (to within one and the spread's share of the window): a quota refuses at
    // its count every time, strays at random ones.
    const s0 = this.suspect;
    const again = s0 !== undefined && now <= s0.until && Math.abs(count - s0.count) <= 1 + (Math.max(count, s0.count) * spread) / w;
    if (!again && !full) {
      this.suspect = { until: Math.max(now, this.pausedUntil) + 2 * this.spanMs(), count };
      return log('alone: a stray until another comes');
    }
    // A lowered quota refuses again at the same pace (or several at once): the larger count stands.
    let most = Math.max(count, again ? (this.suspect as { count: number }).count : 0);
    this.suspect = undefined;
    // The window: as long as the longest Retry-After of a window seen full (a stray's says nothing);
    // counted again over it.
    if (full && p.retryMs >= w + 1000) {
      this.windowMs = Math.floor(p.retryMs / 1000) * 1000;
      most = this.answers.filter((a) => a.ok && a.seen > p.at - this.windowMs && a.seen <= p.at + spread).length;
    }
    this.pauseUntil(now, p.at + p.retryMs);
    this.setLimit(Math.min(this.limit ?? Infinity, most), now);
    this.diag.probedUp = false;
    log('the quota');
  }

  private concurrencyLimit(p: Refusal): void {
    const allowed = Math.max(1, p.inFlight - p.refused);
    let rtt = 0;
    for (const a of this.answers.slice(-64)) rtt = Math.max(rtt, 2 * (a.seen - a.sent));
    // As a probe of the rate: one refusal in PROBE_EVERY requests at most.
    this.capHold.ms = Math.max(2 * this.spanMs(), (PROBE_EVERY * rtt) / allowed);
    this.capHold.at = this.pausedUntil + this.capHold.ms;
    this.setCap(Math.min(this.cap, allowed));
    this.opts.log?.({ verdict: 'concurrency', concurrency: this.cap, refused: p.refused, inFlight: p.inFlight, holdMs: this.capHold.ms });
  }

  private setCap(n: number): void {
    const next = Math.max(1, Math.min(this.opts.maxConcurrency, n));
    if (next === this.cap) return;
    this.cap = next;
    this.onConcurrencyChange?.(next);
    for (const w of [...this.waiters]) w();
  }

  /**
   * How much of [from, to) was spent paused, ms. The time before the first attempt is not: the
   * server's window held none of ours then, so what it took since is its count (a 429 in the first
   * second of a run was never counted, and a small quota was learned by another burst).
   */
  private idleMs(from: number, to: number): number {
    let idle = 0;
    for (const p of this.pauses) idle += Math.max(0, Math.min(to, p.until) - Math.max(from, p.from, this.firstRelease ?? from));
    return Math.min(to - from, idle);
  }
}
