import type { IncomingMessage, ServerResponse } from 'node:http';
import { authenticate } from './bearer.js';
import { sendJson } from './http.js';
import type { InterfaceState } from './state.js';

/** SCIM-style extension holding the accounts (the document only says "an array of accounts that holds the account key"). */
export const ACCOUNTS_EXTENSION = 'urn:scim:schemas:extension:getgo:1.0';

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
