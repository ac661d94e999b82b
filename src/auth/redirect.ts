import { printable } from '../util/printable.js';
import { registerSecret } from '../util/redact.js';
import { AuthorizationResponseError } from './errors/authorization-response-error.js';
import { normalizeTokenResponse, type TokenResponse } from './token-response.js';
import type { TokenServiceVariant } from './variants.js';

/** What the code flow's redirect carries. */
export interface AuthorizationCode {
  code: string;
  state: string | undefined;
}

/**
 * Reads the code flow's redirect (`redirect_uri?code=...&state=...`). Throws
 * `AuthorizationResponseError` when the service sent `error`, when the code is missing, or when
 * `expectedState` is given and the redirect's state differs from it.
 */
export function parseCodeRedirect(redirectUrl: string | URL, expectedState?: string): AuthorizationCode {
  const url = new URL(redirectUrl);
  const params = url.searchParams;
  checkError(params);
  checkState(params.get('state') ?? undefined, expectedState);
  const code = params.get('code');
  if (!code) throw new AuthorizationResponseError('the authorize redirect carries no code');
  registerSecret(code);
  return { code, state: params.get('state') ?? undefined };
}

/**
 * Reads the implicit flow's redirect fragment (`redirect_uri#access_token=...&token_type=Bearer&
 * expires_in=...&principal=...&scope=...&state=...`) as a normalised token. The former provider's
 * fragment (`type`, milliseconds, `username`) is normalised the same way as its token answers.
 */
export function parseImplicitRedirect(
  redirectUrl: string | URL,
  expectedState?: string,
  variant: TokenServiceVariant = 'current',
): TokenResponse & { state: string | undefined } {
  const url = new URL(redirectUrl);
  const params = new URLSearchParams(url.hash.replace(/^#/, ''));
  registerSecret(params.get('access_token'));
  checkError(params);
  checkState(params.get('state') ?? undefined, expectedState);
  if (!params.get('access_token')) throw new AuthorizationResponseError('the authorize redirect fragment carries no access_token');
  const raw: Record<string, string> = {};
  for (const [k, v] of params) raw[k] = v;
  return { ...normalizeTokenResponse(raw, variant), state: params.get('state') ?? undefined };
}

function checkError(params: URLSearchParams): void {
  const error = params.get('error');
  if (!error) return;
  const description = params.get('error_description');
  // Both come from whoever requested the callback: never print their control characters.
  throw new AuthorizationResponseError(
    `the authorization was refused: ${printable(error, 100)}${description ? ` (${printable(description)})` : ''}`,
    printable(error, 100),
  );
}

function checkState(actual: string | undefined, expected: string | undefined): void {
  if (expected === undefined) return;
  if (actual !== expected) {
    throw new AuthorizationResponseError(
      'the authorize redirect carries a different state than the one sent; the answer was ignored (possible request forgery). Sign in again.',
    );
  }
}
