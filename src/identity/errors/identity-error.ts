import { redact, redactDeep } from '../../util/redact.js';

/** The identity lookup failed (non-2xx, unreachable: `cause`, or not an identity record); retryable for network, 429, 5xx. */
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
