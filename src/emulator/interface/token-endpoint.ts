import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from './http.js';
import type { EmulatedVariant, InterfaceState, IssuedToken } from './state.js';

/** Fixed access-token lifetime of the superseded proxies (the document: 3600 s for the v2 proxy). */
const PROXY_TTL_SECONDS = 3600;

/** The token endpoint of each variant, by path. */
export const TOKEN_PATHS: Readonly<Record<string, EmulatedVariant>> = {
  '/oauth/token': 'current',
  '/oauth/v2/token': 'v2-proxy',
  '/oauth/access_token': 'oldest',
  '/oauth2/v2/token': 'former-provider',
};

/**
 * A token answer in the shape of the variant that issues it:
 * - current: access_token, token_type, expires_in (s), scope, principal, refresh_token when issued (`issue`: a new one, or this one);
 * - v2 proxy: token_type, integer expires_in 3600, and the user fields (version "3");
 * - oldest: expires_in as a string, the user fields and platform (version "2"), no token_type;
 * - former provider: `type`, expires_in in milliseconds, `username`, a JWT-shaped refresh token.
 */
export function tokenAnswer(
  state: InterfaceState,
  grant: Omit<IssuedToken, 'expiresAt'>,
  now: number,
  issue: boolean | string,
): Record<string, unknown> {
  const o = state.options;
  const ttl = grant.variant === 'v2-proxy' || grant.variant === 'oldest' ? PROXY_TTL_SECONDS : o.accessTokenTtlSeconds;
  const access = state.issueAccessToken(grant, ttl, now);
  const refresh = typeof issue === 'string' ? issue : issue ? state.issueRefreshToken(grant, now) : undefined;
  const user = o.user;
  const legacyUser = {
    account_key: user.accountKeys[0] ?? '',
    organizer_key: user.id,
    email: user.userName,
    firstName: user.givenName,
    lastName: user.familyName,
    account_type: 'corporate',
  };
  switch (grant.variant) {
    case 'current':
      return { access_token: access, token_type: 'Bearer', refresh_token: refresh, expires_in: ttl, scope: grant.scope, principal: user.userName };
    case 'v2-proxy':
      return { access_token: access, token_type: 'Bearer', refresh_token: refresh, expires_in: ttl, ...legacyUser, version: '3' };
    case 'oldest':
      return { access_token: access, refresh_token: refresh, expires_in: String(ttl), ...legacyUser, version: '2', platform: 'global' };
    case 'former-provider':
      return { access_token: access, type: 'Bearer', refresh_token: refresh, expires_in: ttl * 1000, username: user.userName, scope: grant.scope };
  }
}

const oauthError = (res: ServerResponse, status: number, error: string, description: string, headers: Record<string, string> = {}) =>
  sendJson(res, status, { error, error_description: description }, headers);

/** POST {auth_url}/oauth/token and the superseded token endpoints: every grant, with the rotation rules. */
export async function handleToken(req: IncomingMessage, res: ServerResponse, url: URL, state: InterfaceState, now: number): Promise<void> {
  const variant = TOKEN_PATHS[url.pathname]!;
  const method = req.method ?? 'GET';
  const allowed = variant === 'oldest' ? ['GET', 'POST'] : ['POST'];
  if (!allowed.includes(method)) {
    return oauthError(res, 405, 'invalid_request', `use ${allowed.join(' or ')}`, { allow: allowed.join(', ') });
  }

  const params = new URLSearchParams(variant === 'oldest' ? url.search : '');
  if (method === 'POST') {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const body = await readBody(req);
    if (body === undefined) return oauthError(res, 413, 'invalid_request', 'body too large');
    if (type !== 'application/x-www-form-urlencoded') {
      return oauthError(res, 400, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
    }
    for (const [k, v] of new URLSearchParams(body)) params.set(k, v);
  }

  const o = state.options;
  if (variant === 'oldest') {
    if (params.get('client_id') !== o.clientId) return oauthError(res, 401, 'invalid_client', 'unknown client_id');
  } else {
    const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    const decoded = basic === undefined ? '' : Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0 || decoded.slice(0, colon) !== o.clientId || decoded.slice(colon + 1) !== o.clientSecret) {
      return oauthError(res, 401, 'invalid_client', 'client authentication failed', { 'www-authenticate': 'Basic realm="oauth"' });
    }
  }

  const grantType = params.get('grant_type') ?? '';
  state.counters.grants[grantType] = (state.counters.grants[grantType] ?? 0) + 1;
  switch (grantType) {
    case 'authorization_code':
      return codeGrant(res, params, variant, state, now);
    case 'refresh_token':
      return refreshGrant(res, params, variant, state, now);
    case 'password':
      return passwordGrant(res, params, variant, state, now);
    default:
      return oauthError(res, 400, 'unsupported_grant_type', `grant_type ${JSON.stringify(grantType)} is not supported`);
  }
}

function codeGrant(res: ServerResponse, params: URLSearchParams, variant: EmulatedVariant, state: InterfaceState, now: number): void {
  const code = params.get('code');
  if (!code) return oauthError(res, 400, 'invalid_request', 'code is missing');
  const issued = state.codes.get(code);
  if (!issued || issued.variant !== variant || issued.clientId !== state.options.clientId) {
    return oauthError(res, 400, 'invalid_grant', 'unknown authorization code');
  }
  if (issued.used) return oauthError(res, 400, 'invalid_grant', 'authorization code already used');
  if (issued.expiresAt <= now) return oauthError(res, 400, 'invalid_grant', 'authorization code expired');
  // redirect_uri is required only if it was given at authorize, and must then be the same; ignored otherwise.
  if (issued.redirectUri !== undefined && params.get('redirect_uri') !== issued.redirectUri) {
    return oauthError(res, 400, 'invalid_grant', 'redirect_uri does not match the one given at authorize');
  }
  if (issued.codeChallenge !== undefined) {
    const verifier = params.get('code_verifier');
    if (!verifier) return oauthError(res, 400, 'invalid_grant', 'code_verifier is missing (the code was asked for with a PKCE challenge)');
    if (createHash('sha256').update(verifier, 'ascii').digest('base64url') !== issued.codeChallenge) {
      return oauthError(res, 400, 'invalid_grant', 'code_verifier does not match the code_challenge');
    }
  }
  issued.used = true;
  sendJson(res, 200, tokenAnswer(state, issued, now, true));
}

function refreshGrant(res: ServerResponse, params: URLSearchParams, variant: EmulatedVariant, state: InterfaceState, now: number): void {
  const token = params.get('refresh_token');
  if (!token) return oauthError(res, 400, 'invalid_request', 'refresh_token is missing');
  const issued = state.refreshTokens.get(token);
  if (variant !== 'former-provider' && state.isFormerProviderToken(token) && (!issued || issued.variant === 'former-provider')) {
    return oauthError(res, 400, 'invalid_request', 'unsupported.jwt');
  }
  if (!issued || issued.variant !== variant || issued.clientId !== state.options.clientId) {
    return oauthError(res, 400, 'invalid_grant', 'unknown refresh token');
  }
  if (issued.replacedBy !== undefined) return oauthError(res, 400, 'invalid_grant', 'refresh token was replaced by a newer one');
  if (issued.expiresAt <= now) return oauthError(res, 400, 'invalid_grant', 'refresh token expired');

  const remaining = issued.expiresAt - now;
  const grant = { clientId: issued.clientId, scope: issued.scope, variant };
  if (remaining < state.options.rotateWhenRemainingBelowSeconds) {
    // Near expiry: a new refresh token, which invalidates the one sent.
    const next = state.issueRefreshToken(grant, now);
    issued.replacedBy = next;
    return sendJson(res, 200, tokenAnswer(state, grant, now, next));
  }
  // Not yet replaced: the answer omits refresh_token and the same one stays valid.
  sendJson(res, 200, tokenAnswer(state, grant, now, false));
}

function passwordGrant(res: ServerResponse, params: URLSearchParams, variant: EmulatedVariant, state: InterfaceState, now: number): void {
  const o = state.options;
  if (!o.passwordGrantEnabled) {
    return oauthError(res, 400, 'unauthorized_client', 'the password grant is deprecated and not enabled for this client');
  }
  const username = params.get(variant === 'oldest' ? 'user_id' : 'username');
  if (username !== o.user.userName || params.get('password') !== o.user.password) {
    return oauthError(res, 400, 'invalid_grant', 'wrong user name or password');
  }
  const grant = { clientId: o.clientId, scope: params.get('scope') ?? '', variant };
  sendJson(res, 200, tokenAnswer(state, grant, now, true));
}
