import { describe, expect, it } from 'vitest';
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
