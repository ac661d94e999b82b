/** Fault settings, their validation, the seeded dice that decide each fault, and the rate limiter. */
import type { EmulatorFaults } from './options.js';
import { Random } from './prng.js';

export const FAULT_KINDS = [
  'serverError', 'reset', 'truncate', 'partial', 'rateLimited', 'maxResults', 'maxSpan', 'truncatedResults',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

const RATES = ['serverErrorRate', 'resetRate', 'truncateRate', 'partialErrorRate'] as const;
const COUNTS = ['maxResults', 'maxSpanSeconds', 'truncateResultsTo'] as const;

/** Throws a RangeError naming the first bad setting. */
export function validateFaults(f: EmulatorFaults): void {
  for (const k of RATES) {
    const v = f[k];
    if (v !== undefined && !(Number.isFinite(v) && v >= 0 && v <= 1)) {
      throw new RangeError(`faults.${k} must be a probability between 0 and 1; got ${v}`);
    }
  }
  for (const k of COUNTS) {
    const v = f[k];
    if (v !== undefined && !(Number.isInteger(v) && v >= 0)) {
      throw new RangeError(`faults.${k} must be a non-negative integer; got ${v}`);
    }
  }
  if (f.latencyMs !== undefined && !(Number.isFinite(f.latencyMs) && f.latencyMs >= 0)) {
    throw new RangeError(`faults.latencyMs must be a non-negative number; got ${f.latencyMs}`);
  }
  if (f.rateLimitRps !== undefined && !(Number.isFinite(f.rateLimitRps) && f.rateLimitRps > 0)) {
    throw new RangeError(`faults.rateLimitRps must be a positive number; got ${f.rateLimitRps}`);
  }
}

/** Seeded dice: the n-th roll of a run is the same on every run with the same seed. */
export class FaultDice {
  private readonly rng: Random;

  constructor(seed: number) {
    this.rng = new Random(seed, 0xfa017);
  }

  /** True with probability `rate`; rolls nothing (keeps the sequence) when the fault is off. */
  roll(rate: number | undefined): boolean {
    if (!rate || rate <= 0) return false;
    if (rate >= 1) return true;
    return this.rng.next() < rate;
  }

  serverErrorStatus(): 500 | 502 | 503 {
    return ([500, 502, 503] as const)[this.rng.int(3)] as 500 | 502 | 503;
  }
}

/**
 * A sliding-window quota: at most floor(rps) requests in any 1-second window (for rps < 1: one
 * request per 1/rps seconds). A refused request learns when the oldest counted one leaves the window.
 */
export class RateLimiter {
  private readonly windowMs: number;
  private readonly limit: number;
  private stamps: number[] = [];
  private head = 0;

  constructor(rps: number) {
    this.windowMs = rps >= 1 ? 1_000 : 1_000 / rps;
    this.limit = rps >= 1 ? Math.floor(rps) : 1;
  }

  /** Counts the request and returns undefined, or returns the Retry-After in whole seconds (>= 1). */
  take(nowMs: number): number | undefined {
    while (this.head < this.stamps.length && (this.stamps[this.head] as number) <= nowMs - this.windowMs) this.head++;
    if (this.head > 1_024) {
      this.stamps = this.stamps.slice(this.head);
      this.head = 0;
    }
    if (this.stamps.length - this.head < this.limit) {
      this.stamps.push(nowMs);
      return undefined;
    }
    const freesAt = (this.stamps[this.head] as number) + this.windowMs;
    return Math.max(1, Math.ceil((freesAt - nowMs) / 1_000));
  }
}
