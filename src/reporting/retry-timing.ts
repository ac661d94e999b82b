import type { RetryOptions } from './defaults.js';

/** Retry-After as delta-seconds; anything else must be an HTTP date. */
const DELAY_SECONDS = /^\d+(\.\d+)?$/;

/** A Retry-After value (delta-seconds or an HTTP date) as ms from `nowMs`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (DELAY_SECONDS.test(v)) return Math.round(Number(v) * 1000);
  const date = Date.parse(v);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

/** True when a Retry-After value states a moment (an HTTP date) rather than a delay in seconds. */
export function retryAfterIsDate(value: string | null | undefined): boolean {
  const v = value?.trim() ?? '';
  return v !== '' && !DELAY_SECONDS.test(v) && !Number.isNaN(Date.parse(v));
}

type Backoff = Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs'>;

/** Full jitter ("Exponential Backoff and Jitter"): a uniform delay in [0, min(max, base * 2^(attempt-1))]. */
export function backoffDelay(attempt: number, policy: Backoff, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}
