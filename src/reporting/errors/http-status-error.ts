import { redact } from '../../util/redact.js';
import { ReportingError } from './reporting-error.js';

/** Answers that mean REPORTING_URL is not the GraphQL endpoint: a setting to fix, like a refused key. */
const WRONG_ADDRESS: Record<number, string> = {
  404: 'nothing is found at that address: check the path in REPORTING_URL (or reportingUrl in the configuration)',
  405: 'that address does not take GraphQL requests (POST): check the path in REPORTING_URL (or reportingUrl in the configuration)',
};

/** Any other non-2xx answer (400, 404, 413, ...): the request itself is wrong. Not retried. */
export class HttpStatusError extends ReportingError {
  override readonly name = 'HttpStatusError';
  readonly kind = 'http-status';
  readonly retryable = false;
  override readonly needsSettingFixed: boolean;
  readonly body: string;
  constructor(readonly status: number, body: string) {
    // Cut (with a margin longer than any secret's forms) before redacting: the body may be large.
    const head = redact(body.slice(0, 4096)).slice(0, 2000);
    const advice = WRONG_ADDRESS[status];
    super(`the reporting endpoint answered HTTP ${status}${advice ? ` (${advice})` : ''}: ${head.slice(0, 300)}`);
    this.needsSettingFixed = advice !== undefined;
    this.body = head;
  }
}
