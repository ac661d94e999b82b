import { ReportingError } from './reporting-error.js';

/** HTTP 200 with complete JSON of the wrong shape (no `data.sessions` list, say). Not retried. */
export class InvalidResponseError extends ReportingError {
  override readonly name = 'InvalidResponseError';
  readonly kind = 'invalid-response';
  readonly retryable = false;
}
