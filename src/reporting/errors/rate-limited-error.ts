import { ReportingError } from './reporting-error.js';

/** HTTP 429. `retryAfterIsDate`: Retry-After was an HTTP date (whole seconds of the clock, not a delay). */
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
