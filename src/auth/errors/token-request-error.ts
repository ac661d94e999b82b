import { summarizeBody } from '../http.js';
import { AuthError } from './auth-error.js';

/**
 * The token endpoint answered with a non-2xx status that does not mean "sign in again"
 * (for instance 401 invalid_client for a wrong client secret, or an authorization code that was
 * already used). Carries the status, the body, and the OAuth `error` / `error_description` when
 * the body had them. Retryable for 429 and 5xx only.
 */
export class TokenRequestError extends AuthError {
  override readonly name = 'TokenRequestError';
  readonly kind = 'token-request';
  readonly retryable: boolean;
  /** The OAuth `error` code of the answer, if any (e.g. `invalid_client`). */
  readonly oauthError: string | undefined;
  readonly oauthErrorDescription: string | undefined;
  constructor(status: number, body: unknown, what: string) {
    const { error, description } = oauthErrorOf(body);
    const detail = error ? `${error}${description ? ` (${description})` : ''}` : summarizeBody(body);
    super(`the token service refused the ${what}: HTTP ${status}${detail ? `: ${detail}` : ''}`, { status, body });
    this.retryable = status === 429 || status >= 500;
    this.oauthError = error;
    this.oauthErrorDescription = description;
  }
}

/** Reads `error` and `error_description` (RFC 6749 section 5.2) from a token endpoint error body. */
export function oauthErrorOf(body: unknown): { error?: string; description?: string } {
  if (!body || typeof body !== 'object') return {};
  const b = body as Record<string, unknown>;
  return {
    ...(typeof b.error === 'string' ? { error: b.error } : {}),
    ...(typeof b.error_description === 'string' ? { description: b.error_description } : {}),
  };
}
