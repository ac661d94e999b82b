import { ExitCode } from '../../errors.js';
import { AuthError } from './auth-error.js';

/** Why a new interactive sign-in is needed. */
export type SignInReason = 'not-signed-in' | 'refresh-token-invalid' | 'former-provider-token' | 'no-refresh-token' | 'other-service';

const EXPLANATION: Record<SignInReason, string> = {
  'not-signed-in': 'no tokens are stored',
  'refresh-token-invalid': 'the refresh token has expired or was replaced; the token service no longer accepts it',
  'former-provider-token':
    'the stored refresh token was issued by the former token provider, whose refresh tokens the current token service rejects (unsupported.jwt)',
  'no-refresh-token': 'the access token has expired and the token service issued no refresh token',
  'other-service': 'the stored tokens were issued by another token service or for another client id',
};

/** A person has to authorize again: thrown instead of the token endpoint's error when refreshing cannot work any more. */
export class SignInRequiredError extends AuthError {
  override readonly name = 'SignInRequiredError';
  readonly kind = 'sign-in-required';
  readonly retryable = false;
  readonly exitCode = ExitCode.signInRequired;
  constructor(
    readonly reason: SignInReason,
    details: { status?: number; body?: unknown; cause?: unknown } = {},
  ) {
    super(`sign-in required: ${EXPLANATION[reason]}. Run \`session-etl auth login\` to sign in again.`, details);
  }
}

export function isSignInRequiredError(e: unknown): e is SignInRequiredError {
  return e instanceof SignInRequiredError;
}
