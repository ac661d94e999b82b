import { redact, redactDeep } from './redact.js';

/**
 * Base of a remote service client's error family (the token service's AuthError, session
 * control's ControlError). `retryable` says whether the same request may succeed if sent again;
 * `status` and `body` carry what the service answered, if it answered. Messages and bodies pass
 * through `redact()`, so no registered secret can leak through them.
 */
export abstract class ServiceError extends Error {
  abstract readonly retryable: boolean;
  /** A short machine-readable kind. */
  abstract readonly kind: string;
  /** HTTP status of the service's answer, when there was one. */
  readonly status: number | undefined;
  /** The answer's body (parsed JSON when it was JSON, else text), with secrets redacted. */
  readonly body: unknown;
  constructor(message: string, details: { status?: number; body?: unknown; cause?: unknown } = {}) {
    super(redact(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.body = redactDeep(details.body);
  }
}
