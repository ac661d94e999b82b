import { AuthError } from './auth-error.js';

/** The token service could not be reached, or did not answer in time. Retryable; the original is the `cause`. */
export class AuthNetworkError extends AuthError {
  override readonly name = 'AuthNetworkError';
  readonly kind = 'network';
  readonly retryable = true;
  constructor(message: string, cause: unknown) {
    super(message, { cause });
  }
}
