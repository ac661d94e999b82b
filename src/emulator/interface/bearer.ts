import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerOf, sendJson } from './http.js';
import type { InterfaceState, IssuedToken } from './state.js';

/**
 * The valid access token of the request, or undefined after answering 401 (missing, unknown or
 * expired token, or one of the former provider's, which only its own APIs accept).
 */
export function authenticate(req: IncomingMessage, res: ServerResponse, state: InterfaceState, now: number): IssuedToken | undefined {
  const token = bearerOf(req);
  const issued = token === undefined ? undefined : state.accessTokens.get(token);
  let problem: string | undefined;
  if (!token) problem = 'a Bearer access token is required';
  else if (!issued || issued.variant === 'former-provider') problem = 'unknown access token';
  else if (issued.expiresAt <= now) problem = 'access token expired';
  if (problem || !issued) {
    sendJson(res, 401, { error: 'invalid_token', message: problem }, { 'www-authenticate': `Bearer error="invalid_token"` });
    return undefined;
  }
  return issued;
}

/**
 * Whether the granted scope holds the session-kind word and `settings` (written `remoteview;settings`;
 * scopes are split on spaces and semicolons).
 */
export function hasScope(scope: string, kind: string): boolean {
  const parts = new Set(scope.toLowerCase().split(/[\s;]+/).filter(Boolean));
  return parts.has(kind.toLowerCase()) && parts.has('settings');
}
