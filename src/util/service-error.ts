import { redact, redactDeep } from './redact.js';

/**
 * Base of a remote service client's error family (AuthError, ControlError): `retryable`, and what the service
 * answered. Messages and bodies pass through `redact()`.
 */
export abstract class ServiceError extends Error {
  abstract readonly retryable: boolean;
  abstract readonly kind: string;
  readonly status: number | undefined;
  /** Parsed JSON when it was JSON, else text. */
  readonly body: unknown;
  constructor(message: string, details: { status?: number; body?: unknown; cause?: unknown } = {}) {
    super(redact(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.body = redactDeep(details.body);
  }
}
