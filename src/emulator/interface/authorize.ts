import type { ServerResponse } from 'node:http';
import { redirect, sendText } from './http.js';
import type { EmulatedVariant, InterfaceState } from './state.js';
import { tokenAnswer } from './token-endpoint.js';

/**
 * The browser authorize pages. The emulator auto-approves: it redirects at once to redirect_uri with
 * `code` and `state` (code flow), or with a fragment holding the token (implicit flow).
 *
 * - GET /oauth/authorize with response_type: the current service (code or token).
 * - GET /oauth/authorize without response_type: the oldest proxy (code only).
 * - GET /oauth/v2/authorize: the v2 proxy (response_type=code required).
 * - GET /oauth2/v2/grant: the former provider (code or token; its fragment says `type`,
 *   milliseconds and `username`).
 */
export function handleAuthorize(res: ServerResponse, url: URL, state: InterfaceState, now: number): void {
  state.counters.authorize++;
  const q = url.searchParams;
  let variant: EmulatedVariant;
  if (url.pathname === '/oauth/v2/authorize') variant = 'v2-proxy';
  else if (url.pathname === '/oauth2/v2/grant') variant = 'former-provider';
  else variant = q.has('response_type') ? 'current' : 'oldest';

  const o = state.options;
  // Never redirect for an unknown client: its redirect_uri is not to be trusted.
  if (q.get('client_id') !== o.clientId) return sendText(res, 400, 'unauthorized_client: unknown client_id');
  const givenRedirect = q.get('redirect_uri') ?? undefined;
  const target = givenRedirect ?? o.registeredRedirectUri;
  if (!target) return sendText(res, 400, 'invalid_request: redirect_uri is required (no redirect address is registered)');
  if (!URL.canParse(target)) return sendText(res, 400, 'invalid_request: redirect_uri is not a URL');
  const targetUrl = new URL(target);
  const responseType = variant === 'oldest' ? 'code' : q.get('response_type');
  const appState = q.get('state');
  const scope = variant === 'current' || variant === 'former-provider' ? (q.get('scope') ?? '') : '';
  const send = (params: Record<string, unknown>, inFragment = false): void => {
    const p = inFragment ? new URLSearchParams() : targetUrl.searchParams;
    for (const [k, v] of Object.entries(params)) if (v !== undefined) p.set(k, String(v));
    if (appState !== null) p.set('state', appState);
    if (inFragment) targetUrl.hash = p.toString();
    redirect(res, targetUrl);
  };

  if (responseType === 'code') {
    // PKCE (RFC 7636): only S256 is accepted; the challenge is checked at the exchange.
    const challenge = q.get('code_challenge') ?? undefined;
    const method = q.get('code_challenge_method') ?? 'plain';
    if (challenge !== undefined && (method !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(challenge))) {
      return send({ error: 'invalid_request', error_description: 'code_challenge must be an S256 challenge (code_challenge_method=S256)' });
    }
    const code = state.issueCode({ clientId: o.clientId, redirectUri: givenRedirect, scope, variant, ...(challenge ? { codeChallenge: challenge } : {}) }, now);
    return send({ code });
  }
  if (responseType === 'token' && (variant === 'current' || variant === 'former-provider')) {
    return send(tokenAnswer(state, { clientId: o.clientId, scope, variant }, now, false), true);
  }
  send({ error: 'unsupported_response_type' });
}
