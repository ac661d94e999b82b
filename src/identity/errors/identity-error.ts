import { redact, redactDeep } from '../../util/redact.js';

/**
 * The identity lookup failed: the service answered non-2xx (`status`, `body`), could not be reached
 * (`cause`, no status), or answered something that is not an identity record. Secrets are redacted.
 * Retryable for network failures, 429 and 5xx.
 */
export class IdentityError extends Error {
  override readonly name = 'IdentityError';
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly body: unknown;
  constructor(message: string, details: { status?: number; body?: unknown; cause?: unknown; retryable: boolean }) {
    super(redact(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.body = redactDeep(details.body);
    this.retryable = details.retryable;
  }
}

export function isIdentityError(e: unknown): e is IdentityError {
  return e instanceof IdentityError;
}
