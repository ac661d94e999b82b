import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { InterfaceConfigError, loadInterfaceConfig } from '../../src/auth/interface-config.js';
import { TokenClient } from '../../src/auth/token-client.js';
import { normalizeTokenResponse } from '../../src/auth/token-response.js';
import { InvalidTokenResponseError } from '../../src/auth/errors/invalid-token-response-error.js';

const user = { account_key: 'K1', organizer_key: 'O1', email: 'a@b.c', firstName: 'Ada', lastName: 'Agent', account_type: 'corporate' };

describe('normalizeTokenResponse', () => {
  it.each([
    [
      'current',
      'current' as const,
      { access_token: 'AT1234', token_type: 'Bearer', refresh_token: 'RT1234', expires_in: 3600, scope: 's', principal: 'a@b.c' },
      { access_token: 'AT1234', token_type: 'Bearer', refresh_token: 'RT1234', expires_in: 3600, scope: 's', principal: 'a@b.c' },
    ],
    [
      'v2 proxy: integer expires_in, user fields aside',
      'v2-proxy' as const,
      { access_token: 'AT1234', token_type: 'Bearer', refresh_token: 'RT1234', expires_in: 3600, ...user, version: '3' },
      { access_token: 'AT1234', token_type: 'Bearer', refresh_token: 'RT1234', expires_in: 3600, user_fields: { ...user, version: '3' } },
    ],
    [
      'oldest: string expires_in, platform, no token_type',
      'oldest' as const,
      { access_token: 'AT1234', refresh_token: 'RT1234', expires_in: '3600', ...user, version: '2', platform: 'global' },
      { access_token: 'AT1234', token_type: 'Bearer', refresh_token: 'RT1234', expires_in: 3600, user_fields: { ...user, version: '2', platform: 'global' } },
    ],
    [
      'former provider: type, milliseconds, username',
      'former-provider' as const,
      { access_token: 'AT1234', type: 'Bearer', expires_in: 3_599_500, username: 'a@b.c', scope: 's' },
      { access_token: 'AT1234', token_type: 'Bearer', expires_in: 3599, principal: 'a@b.c', scope: 's' },
    ],
  ])('%s', (_name, variant, raw, expected) => {
    expect(normalizeTokenResponse(raw, variant)).toEqual({ ...expected, variant });
  });

  it.each([
    ['no access_token', { token_type: 'Bearer' }],
    ['a non-numeric expires_in', { access_token: 'AT1234', expires_in: 'soon' }],
    ['a body that is not an object', 'oops'],
  ])('refuses %s', (_n, raw) => {
    expect(() => normalizeTokenResponse(raw, 'current')).toThrow(InvalidTokenResponseError);
  });
});

describe('secrets larger than any real one (issue 28: 4 KiB bound)', () => {
  const HUGE = randomBytes(30_000).toString('base64url');
  const pieces = (s: string) => Array.from({ length: 8 }, (_, i) => s.slice(i * 1000, i * 1000 + 16));

  it.each(['access_token', 'refresh_token'])('a token service answering an oversized %s is refused, without echoing it', async (field) => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: 'at-normal-1234', refresh_token: 'rt-normal-1234', token_type: 'Bearer', expires_in: 3600, [field]: HUGE }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const client = new TokenClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, clientId: 'cid', clientSecret: 'client-secret-5678' });
      const err = await client.refresh('rt-old-0000').then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidTokenResponseError);
      expect((err as Error).message).toContain(`${field}: longer than 4 KiB (4,096 bytes)`);
      const shown = `${(err as Error).message} ${JSON.stringify(err)} ${inspect(err, { depth: 5 })}`;
      for (const p of pieces(HUGE)) expect(shown).not.toContain(p);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('a token of 4 KiB is accepted (a long JWT is a real token)', () => {
    const jwt = 'eyJ' + 'a'.repeat(4093);
    expect(normalizeTokenResponse({ access_token: jwt }, 'current').access_token).toBe(jwt);
  });

  it('OAUTH_CLIENT_SECRET longer than 4 KiB is a setting error (exit 2), never shown', () => {
    let err: unknown;
    try {
      loadInterfaceConfig({ env: { OAUTH_CLIENT_SECRET: HUGE.slice(0, 5000), AUTH_URL: 'http://127.0.0.1:9' } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InterfaceConfigError);
    expect((err as Error).message).toBe('invalid setting: OAUTH_CLIENT_SECRET is longer than 4 KiB (4,096 bytes), longer than any client secret: is it the right value? (nothing of it is shown)');
  });
});
