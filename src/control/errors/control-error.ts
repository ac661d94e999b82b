import { ServiceError } from '../../util/service-error.js';

/**
 * Base of the session control client's error family (status, body and redaction: ServiceError).
 * Failure codes and bodies are not published, so nothing is assumed about them.
 */
export abstract class ControlError extends ServiceError {}

export function isControlError(e: unknown): e is ControlError {
  return e instanceof ControlError;
}
