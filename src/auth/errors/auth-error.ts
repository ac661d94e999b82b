import { ServiceError } from '../../util/service-error.js';

/** Base of the token service client's error family (status, body and redaction: ServiceError). */
export abstract class AuthError extends ServiceError {}

export function isAuthError(e: unknown): e is AuthError {
  return e instanceof AuthError;
}
