import { redact } from '../../util/redact.js';
import { ReportingError } from './reporting-error.js';

/** Any other non-2xx answer (400, 404, 413, ...): the request itself is wrong. Not retried. */
export class HttpStatusError extends ReportingError {
  override readonly name = 'HttpStatusError';
  readonly kind = 'http-status';
  readonly retryable = false;
  readonly body: string;
  constructor(readonly status: number, body: string) {
    // Cut (with a margin longer than any secret's forms) before redacting: the body may be large.
    const head = redact(body.slice(0, 4096)).slice(0, 2000);
    super(`the reporting endpoint answered HTTP ${status}: ${head.slice(0, 300)}`);
    this.body = head;
  }
}
