/**
 * Pure helpers for retry timing: Retry-After parsing and exponential backoff with full jitter.
 */

/** Retry-After as delta-seconds; anything else must be an HTTP date. */
const DELAY_SECONDS = /^\d+(\.\d+)?$/;

/**
 * Parses a Retry-After header value (delta-seconds or an HTTP date) into milliseconds from `nowMs`.
 * Returns undefined when absent or unreadable; never negative.
 */
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

export interface BackoffPolicy {
  /** First delay ceiling in ms. */
  baseDelayMs: number;
  /** Largest delay in ms. */
  maxDelayMs: number;
}

/** Full jitter ("Exponential Backoff and Jitter"): a uniform delay in [0, min(max, base * 2^(attempt-1))]. */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}
