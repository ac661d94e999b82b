import { redact } from '../../util/redact.js';

/**
 * A 2xx answer of the token service whose body is not a token response (no access_token, an
 * expires_in that is not a number...). Outside the AuthError family on purpose: the request worked,
 * the data did not.
 */
export class InvalidTokenResponseError extends Error {
  override readonly name = 'InvalidTokenResponseError';
  readonly retryable = false;
  constructor(
    message: string,
    /** The validation issues, as text. */
    readonly issues: string[],
  ) {
    super(redact(message));
  }
}
