/** The reporting client's defaults, stated once (config/defaults.ts takes its own from here). */

export interface RetryOptions {
  /** Attempts per request for transient errors (first try included). Default 5. */
  maxAttempts: number;
  /** How many 429 answers one request may wait out before failing. Default 20. */
  maxRateLimitWaits: number;
  /** Backoff ceiling of the first retry, ms. Default 500. */
  baseDelayMs: number;
  /** Largest backoff, ms. Default 30 000. */
  maxDelayMs: number;
  /** Longest Retry-After honoured, ms; a longer one fails the request. Default 300 000. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryOptions = {
  maxAttempts: 5,
  maxRateLimitWaits: 20,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 300_000,
};

/** Per-request timeout, ms, body included. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** 256 MiB: about 500,000 sessions in one answer; a day of a busy account is a few megabytes. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024;

/** The retry policy with every field given (an absent or undefined one takes its default). */
export function retryOptions(given: Partial<RetryOptions> = {}): RetryOptions {
  const out = { ...DEFAULT_RETRY };
  for (const k of Object.keys(out) as (keyof RetryOptions)[]) out[k] = given[k] ?? out[k];
  return out;
}
