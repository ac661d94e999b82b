import { summarizeBody } from '../../auth/http.js';
import { ControlError } from './control-error.js';

/** A non-2xx answer, carried as is (`status`, `body`, secrets redacted): its codes are not published. Retryable for 429 and 5xx. */
export class ControlHttpError extends ControlError {
  override readonly name = 'ControlHttpError';
  readonly kind = 'http-status';
  readonly retryable: boolean;
  constructor(status: number, body: unknown, what: string) {
    const hint =
      status === 401 || status === 403
        ? ' (the access token was refused: it must come from the authorization code flow and carry the scope remoteview;settings; `session-etl auth login` signs in again)'
        : '';
    super(`${what} failed: the console answered HTTP ${status}${body === undefined || body === '' ? '' : `: ${summarizeBody(body)}`}${hint}`, { status, body });
    this.retryable = status === 429 || status >= 500;
  }
}
