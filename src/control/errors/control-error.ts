import { redact, redactDeep } from '../../util/redact.js';

/**
 * Base of the session control client's error family. `status` and `body` carry what the console
 * answered, if it answered (failure codes and bodies are not published, so nothing is assumed about
 * them); `retryable` says whether the same request may succeed if sent again. Secrets are redacted.
 */
export abstract class ControlError extends Error {
  abstract readonly retryable: boolean;
  abstract readonly kind: string;
  readonly status: number | undefined;
  readonly body: unknown;
  constructor(message: string, details: { status?: number; body?: unknown; cause?: unknown } = {}) {
    super(redact(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.body = redactDeep(details.body);
  }
}

export function isControlError(e: unknown): e is ControlError {
  return e instanceof ControlError;
}
