import { AuthError } from './auth-error.js';

/**
 * The redirect back from the authorize page cannot be used: the `state` does not match the one
 * sent (possible request forgery), the service sent an `error` (e.g. access_denied), or the code
 * or token is missing. Not retryable: start the sign-in again.
 */
export class AuthorizationResponseError extends AuthError {
  override readonly name = 'AuthorizationResponseError';
  readonly kind = 'authorization-response';
  readonly retryable = false;
  constructor(
    message: string,
    /** The OAuth `error` parameter of the redirect, when there was one. */
    readonly oauthError?: string,
  ) {
    super(message);
  }
}
