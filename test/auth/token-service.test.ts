import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildAuthorizeUrl } from '../../src/auth/authorize-url.js';
import { AuthorizationResponseError } from '../../src/auth/errors/authorization-response-error.js';
import { SignInRequiredError } from '../../src/auth/errors/sign-in-required-error.js';
import { TokenRequestError } from '../../src/auth/errors/token-request-error.js';
import { parseCodeRedirect, parseImplicitRedirect } from '../../src/auth/redirect.js';
import { PASSWORD_GRANT_WARNING, TokenClient } from '../../src/auth/token-client.js';
import { redact } from '../../src/util/redact.js';
import { authorizeRedirect, CLIENT_ID, CLIENT_SECRET, signIn, startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
afterEach(async () => t?.close());

async function catchError(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('authorization code grant', () => {
  beforeEach(async () => {
    t = await startTestEmulator();
  });

  it('exchanges the code for a Bearer token with a refresh token, scope and principal', async () => {
    const tok = await signIn(t);
    expect(tok).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'remoteview;settings', principal: 'agent@example.com', variant: 'current' });
    expect(tok.access_token).toMatch(/^emu-at-/);
    expect(tok.refresh_token).toMatch(/^emu-rt-/);
    expect(tok.user_fields).toBeUndefined();
    expect(t.state().counters.grants.authorization_code).toBe(1);
  });

  it('sends redirect_uri exactly when it was given at authorize: a different one is refused', async () => {
    const url = buildAuthorizeUrl({ baseUrl: t.base, clientId: CLIENT_ID, redirectUri: 'http://127.0.0.1:9/a', scope: 'x', state: 's' });
    const { code } = parseCodeRedirect(await authorizeRedirect(url), 's');
    const err = await catchError(t.client().exchangeCode(code, 'http://127.0.0.1:9/b'));
    expect(err).toBeInstanceOf(TokenRequestError);
    expect(err).toMatchObject({ status: 400, oauthError: 'invalid_grant', retryable: false });
  });

  it('without redirect_uri at authorize (registered address), the exchange needs none', async () => {
    await t.close();
    t = await startTestEmulator({ registeredRedirectUri: 'http://127.0.0.1:9/registered' });
    const url = buildAuthorizeUrl({ baseUrl: t.base, clientId: CLIENT_ID, state: 's', variant: 'v2-proxy' });
    const location = await authorizeRedirect(url);
    expect(location.startsWith('http://127.0.0.1:9/registered?')).toBe(true);
    const { code } = parseCodeRedirect(location, 's');
    await expect(t.client('v2-proxy').exchangeCode(code)).resolves.toMatchObject({ expires_in: 3600 });
  });

  it('a code works once', async () => {
    const url = buildAuthorizeUrl({ baseUrl: t.base, clientId: CLIENT_ID, redirectUri: 'http://127.0.0.1:9/a', state: 's' });
    const { code } = parseCodeRedirect(await authorizeRedirect(url), 's');
    await t.client().exchangeCode(code, 'http://127.0.0.1:9/a');
    await expect(t.client().exchangeCode(code, 'http://127.0.0.1:9/a')).rejects.toMatchObject({ oauthError: 'invalid_grant' });
  });

  it('a wrong client secret is a TokenRequestError (invalid_client), and the secret appears nowhere', async () => {
    const client = new TokenClient({ baseUrl: t.base, clientId: CLIENT_ID, clientSecret: 'wrong-secret-0123' });
    const err = (await catchError(client.refresh('emu-rt-whatever'))) as TokenRequestError;
    expect(err).toBeInstanceOf(TokenRequestError);
    expect(err).toMatchObject({ status: 401, oauthError: 'invalid_client' });
    expect(redact('x wrong-secret-0123 y')).not.toContain('wrong-secret-0123');
    expect(JSON.stringify(err.body) + err.message).not.toContain('wrong-secret-0123');
  });

  it('the implicit flow answers in the fragment', async () => {
    const url = buildAuthorizeUrl({ baseUrl: t.base, clientId: CLIENT_ID, redirectUri: 'http://127.0.0.1:9/cb', responseType: 'token', scope: 'a b', state: 'q' });
    const tok = parseImplicitRedirect(await authorizeRedirect(url), 'q');
    expect(tok).toMatchObject({ token_type: 'Bearer', expires_in: 3600, principal: 'agent@example.com', scope: 'a b', state: 'q' });
    expect(tok.refresh_token).toBeUndefined();
  });

  it('a forged state is refused', async () => {
    const url = buildAuthorizeUrl({ baseUrl: t.base, clientId: CLIENT_ID, redirectUri: 'http://127.0.0.1:9/cb', state: 'sent' });
    expect(() => parseCodeRedirect(url.replace('state=sent', 'state=forged'), 'sent')).toThrow(AuthorizationResponseError);
  });
});

describe('superseded variants, normalised to one shape', () => {
  beforeEach(async () => {
    t = await startTestEmulator({ accessTokenTtlSeconds: 7200 });
  });

  it.each([
    ['v2-proxy' as const, { token_type: 'Bearer', expires_in: 3600 }, { version: '3' }],
    ['oldest' as const, { token_type: 'Bearer', expires_in: 3600 }, { version: '2', platform: 'global' }],
  ])('%s: user fields kept aside', async (variant, token, fields) => {
    const tok = await signIn(t, { variant });
    expect(tok).toMatchObject({ ...token, variant });
    expect(typeof tok.expires_in).toBe('number');
    expect(tok.user_fields).toEqual({
      account_key: '1234567890123456789',
      organizer_key: '5087412936511430',
      email: 'agent@example.com',
      firstName: 'Ada',
      lastName: 'Agent',
      account_type: 'corporate',
      ...fields,
    });
    // Their refresh tokens work at their own endpoint.
    await expect(t.client(variant).refresh(tok.refresh_token!)).resolves.toMatchObject({ variant });
  });

  it('former provider: type → token_type, milliseconds → seconds, username → principal', async () => {
    const tok = await signIn(t, { variant: 'former-provider' });
    expect(tok).toMatchObject({ token_type: 'Bearer', expires_in: 7200, principal: 'agent@example.com', variant: 'former-provider' });
    expect(tok.refresh_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  it('former provider implicit flow: the fragment is normalised too', async () => {
    const url = buildAuthorizeUrl({
      baseUrl: t.base,
      clientId: CLIENT_ID,
      redirectUri: 'http://127.0.0.1:9/cb',
      responseType: 'token',
      state: 'f',
      variant: 'former-provider',
    });
    const location = await authorizeRedirect(url);
    expect(location).toContain('type=Bearer');
    expect(location).toContain('expires_in=7200000');
    expect(parseImplicitRedirect(location, 'f', 'former-provider')).toMatchObject({ token_type: 'Bearer', expires_in: 7200, principal: 'agent@example.com' });
  });

  it("the former provider's refresh token at the current endpoint: sign-in required (400 unsupported.jwt)", async () => {
    const tok = await signIn(t, { variant: 'former-provider' });
    const err = (await catchError(t.client('current').refresh(tok.refresh_token!))) as SignInRequiredError;
    expect(err).toBeInstanceOf(SignInRequiredError);
    expect(err.reason).toBe('former-provider-token');
    expect(err.status).toBe(400);
    expect(err.body).toEqual({ error: 'invalid_request', error_description: 'unsupported.jwt' });
    expect(err.message).toContain('session-etl auth login');
  });

  it('pre-made former-provider tokens listed in the options are refused the same way', async () => {
    await t.close();
    t = await startTestEmulator({ formerProviderRefreshTokens: ['legacy-refresh-token-42'] });
    await expect(t.client().refresh('legacy-refresh-token-42')).rejects.toMatchObject({ reason: 'former-provider-token' });
  });
});

describe('password grant (deprecated)', () => {
  it('works when enabled, and warns every time', async () => {
    t = await startTestEmulator({ passwordGrantEnabled: true });
    const warnings: string[] = [];
    const client = new TokenClient({ baseUrl: t.base, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, warn: (m) => warnings.push(m) });
    const tok = await client.passwordGrant('agent@example.com', 'emulator-password');
    expect(tok).toMatchObject({ token_type: 'Bearer', principal: 'agent@example.com' });
    expect(warnings).toEqual([PASSWORD_GRANT_WARNING]);
    expect(PASSWORD_GRANT_WARNING).toMatch(/deprecated.*multifactor.*scope consent.*new clients/);
    expect(t.state().counters.grants.password).toBe(1);
  });

  it('the oldest variant sends user_id and client_id in the form, no secret', async () => {
    t = await startTestEmulator({ passwordGrantEnabled: true });
    const client = new TokenClient({ baseUrl: t.base, clientId: CLIENT_ID, variant: 'oldest', warn: () => {} });
    await expect(client.passwordGrant('agent@example.com', 'emulator-password')).resolves.toMatchObject({ variant: 'oldest', expires_in: 3600 });
  });

  it('is refused for a client without it (the default): a TokenRequestError, not a sign-in error', async () => {
    t = await startTestEmulator();
    const err = await catchError(t.client().passwordGrant('agent@example.com', 'emulator-password'));
    expect(err).toBeInstanceOf(TokenRequestError);
    expect(err).toMatchObject({ status: 400, oauthError: 'unauthorized_client' });
  });
});
