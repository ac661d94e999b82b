import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from './http.js';
import type { InterfaceState, IssuedToken } from './state.js';

/** SCIM-style extension holding the accounts (the document only says "an array of accounts that holds the account key"). */
const ACCOUNTS_EXTENSION = 'urn:scim:schemas:extension:getgo:1.0';

/**
 * The valid access token of the request, or undefined after answering 401 (missing, unknown or
 * expired token, or one of the former provider's, which only its own APIs accept).
 */
export function authenticate(req: IncomingMessage, res: ServerResponse, state: InterfaceState, now: number): IssuedToken | undefined {
  const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
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

/** GET {api_url}/identity/v1/Users/me: any valid access token, no scope needed. */
export function handleIdentity(req: IncomingMessage, res: ServerResponse, state: InterfaceState, now: number): void {
  state.counters.identity++;
  if (req.method !== 'GET') return sendJson(res, 405, { message: 'use GET' }, { allow: 'GET' });
  if (!authenticate(req, res, state, now)) return;
  const u = state.options.user;
  sendJson(res, 200, {
    schemas: ['urn:scim:schemas:core:1.0', ACCOUNTS_EXTENSION],
    id: u.id,
    userName: u.userName,
    name: { givenName: u.givenName, familyName: u.familyName },
    emails: [{ value: u.userName, type: 'work', primary: true }],
    [ACCOUNTS_EXTENSION]: { accounts: u.accountKeys.map((key) => ({ value: key })) },
  });
}
