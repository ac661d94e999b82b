/** Fault settings, their validation, the seeded dice that decide each fault, and the rate limiter. */
import { DRAWN_FAULT_KINDS, type EmulatorFaults, type Schedule } from './options.js';
import { Random } from './prng.js';
import { validateLateData } from './late-data.js';

export const FAULT_KINDS = [
  'serverError', 'reset', 'truncate', 'partial', 'rateLimited', 'maxResults', 'maxSpan', 'truncatedResults',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

const RATES = ['serverErrorRate', 'resetRate', 'truncateRate', 'partialErrorRate', 'faultRate'] as const;
const COUNTS = ['maxResults', 'maxSpanSeconds', 'truncateResultsTo'] as const;

/** Throws a RangeError naming the first bad setting. */
export function validateFaults(f: EmulatorFaults): void {
  const check = <K extends keyof EmulatorFaults>(k: K, ok: (v: NonNullable<EmulatorFaults[K]>) => boolean, what: string, show: (v: unknown) => string = String): void => {
    const v = f[k];
    if (v !== undefined && !ok(v as NonNullable<EmulatorFaults[K]>)) throw new RangeError(`faults.${k} must be ${what}; got ${show(v)}`);
  };
  for (const k of RATES) check(k, (v) => Number.isFinite(v) && v >= 0 && v <= 1, 'a probability between 0 and 1');
  for (const k of COUNTS) check(k, (v) => Number.isInteger(v) && v >= 0, 'a non-negative integer');
  check('latencyMs', (v) => Number.isFinite(v) && v >= 0, 'a non-negative number');
  check('rateLimitRps', (v) => Number.isFinite(v) && v > 0, 'a positive number');
  if (f.faultKinds !== undefined) {
    const bad = Array.isArray(f.faultKinds) ? f.faultKinds.find((k) => !DRAWN_FAULT_KINDS.includes(k)) : f.faultKinds;
    if (bad !== undefined || !(f.faultKinds as unknown[]).length) {
      throw new RangeError(`faults.faultKinds must list some of ${DRAWN_FAULT_KINDS.join(', ')}; got ${JSON.stringify(f.faultKinds)}`);
    }
  }
  checkSchedule('rateLimitSchedule', f.rateLimitSchedule, { zeroAllowed: false });
  checkSchedule('sharedQuotaSchedule', f.sharedQuotaSchedule, { zeroAllowed: true });
  if (f.sharedQuotaSchedule && f.rateLimitRps === undefined && !f.rateLimitSchedule) {
    throw new RangeError('faults.sharedQuotaSchedule needs a quota to share: set rateLimitRps or rateLimitSchedule');
  }
  check('concurrencyLimit', (v) => Number.isInteger(v) && v >= 1, 'a whole number of at least 1');
  check('rateLimitHeaders', (v) => v === 'ietf' || v === 'x', "'ietf' or 'x'", JSON.stringify);
  check('retryAfterFormat', (v) => v === 'seconds' || v === 'http-date', "'seconds' or 'http-date'", JSON.stringify);
  validateLateData(f.holdBack, f.amend);
}

function checkSchedule(name: string, s: Schedule | undefined, { zeroAllowed }: { zeroAllowed: boolean }): void {
  if (s === undefined) return;
  const ok =
    Array.isArray(s) && s.length > 0 &&
    s.every((e, i) =>
      e && Number.isFinite(e.atSeconds) && e.atSeconds >= 0 && (i === 0 || e.atSeconds > (s[i - 1] as { atSeconds: number }).atSeconds) &&
      Number.isFinite(e.rps) && (zeroAllowed ? e.rps >= 0 : e.rps > 0));
  if (!ok) {
    throw new RangeError(
      `faults.${name} must be a list of {atSeconds, rps} with atSeconds rising from 0 or more and rps ${zeroAllowed ? '0 or more' : 'above 0'}; got ${JSON.stringify(s)}`,
    );
  }
}

/** Parses "0:10,30:4,60:10" (seconds:requests per second) into a schedule. */
export function parseSchedule(text: string): Array<{ atSeconds: number; rps: number }> {
  return text.split(',').map((part) => {
    const m = /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(part);
    if (!m) throw new RangeError(`a schedule is a list of SECONDS:RPS pairs such as 0:10,30:4,60:10; got ${JSON.stringify(text)}`);
    return { atSeconds: Number(m[1]), rps: Number(m[2]) };
  });
}

/** Seeded dice: the n-th roll of a run is the same on every run with the same seed. */
export class FaultDice extends Random {
  constructor(seed: number) {
    super(seed, 0xfa017);
  }

  /** True with probability `rate`; rolls nothing (keeps the sequence) when the fault is off. */
  roll(rate: number | undefined): boolean {
    if (!rate || rate <= 0) return false;
    return rate >= 1 || this.next() < rate;
  }
}

/** The schedule's value `elapsedMs` after its start (the first entry's before its time). */
function scheduledAt(schedule: Schedule, elapsedMs: number): number {
  let v = (schedule[0] as { rps: number }).rps;
  for (const s of schedule) if (s.atSeconds * 1000 <= elapsedMs) v = s.rps;
  return v;
}

/** The next change of the schedule after `elapsedMs`, or Infinity. */
function nextChange(schedule: Schedule, elapsedMs: number): number {
  let t = Infinity;
  for (const s of schedule) if (s.atSeconds * 1000 > elapsedMs) t = Math.min(t, s.atSeconds * 1000);
  return t;
}

/** `rps` until `schedule`'s first entry applies; `others`: another client's share, as `sharedQuotaSchedule`. */
export interface RateLimiterOptions {
  rps: number;
  schedule?: Schedule;
  others?: Schedule;
}

/**
 * A sliding-window quota: at most floor(rps) requests in any 1-second window (for rps < 1: one
 * request per 1/rps seconds). A refused request learns when the oldest counted one leaves the window.
 * The quota may follow a schedule, and another client may take part of it (a shared account quota).
 */
export class RateLimiter {
  private readonly o: RateLimiterOptions;
  private stamps: number[] = [];
  private head = 0;
  private start: number | undefined;
  /**
   * When the other client's next request comes, ms after the start. Kept relative to the start so
   * that the schedule is read at the very number nextChange gave: a change at 2.007 s is at
   * 2007.0000000000002 ms, and start + that − start reads 2007, before it (once a loop for ever).
   */
  private nextOther = 0;
  /** The other client's requests waiting for room. */
  private waiting = 0;

  constructor(rps: number | RateLimiterOptions) {
    this.o = typeof rps === 'number' ? { rps } : rps;
  }

  private quota(nowMs: number): { windowMs: number; limit: number } {
    const rps = this.o.schedule?.length ? scheduledAt(this.o.schedule, nowMs - (this.start as number)) : this.o.rps;
    return rps >= 1 ? { windowMs: 1_000, limit: Math.floor(rps) } : { windowMs: 1_000 / rps, limit: 1 };
  }

  private drop(nowMs: number, windowMs: number): void {
    while (this.head < this.stamps.length && (this.stamps[this.head] as number) <= nowMs - windowMs) this.head++;
    if (this.head > 1_024) {
      this.stamps = this.stamps.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * The other client's requests up to `nowMs`: each is counted when the window has room for it,
   * or as soon as it has (a refused client retries); at most a second's worth wait.
   */
  private others(nowMs: number): void {
    const others = this.o.others;
    if (!others?.length) return;
    const start = this.start as number;
    const admit = (t: number): void => {
      const q = this.quota(t);
      this.drop(t, q.windowMs);
      while (this.waiting > 0 && this.stamps.length - this.head < q.limit) {
        this.stamps.push(t);
        this.waiting--;
      }
    };
    while (start + this.nextOther <= nowMs) {
      const t = start + this.nextOther;
      const rps = scheduledAt(others, this.nextOther);
      if (rps <= 0) {
        this.nextOther = nextChange(others, this.nextOther);
        continue;
      }
      // Earlier waiting requests get in when the oldest counted one leaves the window.
      const freed = this.stamps[this.head];
      if (this.waiting > 0 && freed !== undefined && freed + this.quota(t).windowMs <= t) admit(freed + this.quota(t).windowMs);
      this.waiting = Math.min(this.waiting + 1, Math.max(1, Math.ceil(rps)));
      admit(t);
      this.nextOther += 1_000 / rps;
    }
    admit(nowMs);
  }

  /** The window at `nowMs`, with the other client's requests added and those out of the window dropped. */
  private advance(nowMs: number): { windowMs: number; limit: number } {
    if (this.start === undefined) this.start = nowMs;
    this.others(nowMs);
    const q = this.quota(nowMs);
    this.drop(nowMs, q.windowMs);
    return q;
  }

  /** Counts the request and returns undefined, or returns the Retry-After in whole seconds (>= 1). */
  take(nowMs: number): number | undefined {
    const { windowMs, limit } = this.advance(nowMs);
    if (this.stamps.length - this.head < limit) {
      this.stamps.push(nowMs);
      return undefined;
    }
    const freesAt = (this.stamps[this.head] as number) + windowMs;
    return Math.max(1, Math.ceil((freesAt - nowMs) / 1_000));
  }

  /**
   * What rate-limit headers say after the request at `nowMs`: the quota, what is left of it, when
   * the oldest counted request leaves the window (`resetAtMs`, exact; `nowMs` when none is counted)
   * and the seconds to that, rounded up.
   */
  state(nowMs: number): { limit: number; remaining: number; resetSeconds: number; resetAtMs: number } {
    const { windowMs, limit } = this.advance(nowMs);
    const used = this.stamps.length - this.head;
    const oldest = this.stamps[this.head];
    const resetSeconds = oldest === undefined ? 0 : Math.max(1, Math.ceil((oldest + windowMs - nowMs) / 1_000));
    return { limit, remaining: Math.max(0, limit - used), resetSeconds, resetAtMs: oldest === undefined ? nowMs : oldest + windowMs };
  }
}
