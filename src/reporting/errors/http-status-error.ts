import { redact } from '../../util/redact.js';
import { ReportingError } from './reporting-error.js';

/** Any other non-2xx answer (400, 404, 413, ...): the request itself is wrong. Not retried. */
export class HttpStatusError extends ReportingError {
  override readonly name = 'HttpStatusError';
  readonly kind = 'http-status';
  readonly retryable = false;
  readonly body: string;
  constructor(readonly status: number, body: string) {
    super(`the reporting endpoint answered HTTP ${status}: ${redact(body).slice(0, 300)}`);
    this.body = redact(body).slice(0, 2000);
  }
}
