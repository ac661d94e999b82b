import { ServiceError } from '../../util/service-error.js';

/** Base of the session control client's errors (status, body, redaction: ServiceError); failure bodies are not published. */
export abstract class ControlError extends ServiceError {}

export function isControlError(e: unknown): e is ControlError {
  return e instanceof ControlError;
}
