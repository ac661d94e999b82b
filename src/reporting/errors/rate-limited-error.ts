import { ReportingError } from './reporting-error.js';

/**
 * HTTP 429. `retryAfterMs` comes from the Retry-After header when the server sent one;
 * `retryAfterIsDate` says it was stated as an HTTP date (whole seconds of the clock, not a delay).
 */
export class RateLimitedError extends ReportingError {
  override readonly name = 'RateLimitedError';
  readonly kind = 'rate-limited';
  readonly retryable = true;
  constructor(
    readonly retryAfterMs: number | undefined,
    readonly retryAfterIsDate = false,
  ) {
    super(
      `the reporting endpoint answered 429 Too Many Requests` +
        (retryAfterMs === undefined ? ' without Retry-After' : `, retry after ${Math.ceil(retryAfterMs / 1000)} s`),
    );
  }
}
