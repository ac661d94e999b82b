import { describe, expect, it } from 'vitest';
import { buildAuthorizeUrl } from '../../src/auth/authorize-url.js';
import { parseCodeRedirect, parseImplicitRedirect } from '../../src/auth/redirect.js';
import { AuthorizationResponseError } from '../../src/auth/errors/authorization-response-error.js';

const common = { clientId: 'cid', redirectUri: 'http://127.0.0.1:5000/callback', state: 's 1', scope: ['remoteview;settings', 'identity'] };

describe('buildAuthorizeUrl', () => {
  it.each([
    [
      'current, code',
      { baseUrl: 'https://auth.example.com', ...common },
      'https://auth.example.com/oauth/authorize?response_type=code&client_id=cid&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&scope=remoteview%3Bsettings%20identity&state=s%201',
    ],
    [
      'current, token (implicit)',
      { baseUrl: 'https://auth.example.com/', ...common, responseType: 'token' as const },
      'https://auth.example.com/oauth/authorize?response_type=token&client_id=cid&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&scope=remoteview%3Bsettings%20identity&state=s%201',
    ],
    [
      'v2 proxy: response_type=code, state, redirect_uri; no scope',
      { baseUrl: 'https://api.example.com', ...common, variant: 'v2-proxy' as const },
      'https://api.example.com/oauth/v2/authorize?response_type=code&client_id=cid&state=s%201&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback',
    ],
    [
      'v2 proxy without the optional redirect_uri',
      { baseUrl: 'https://api.example.com', clientId: 'cid', state: 'x', variant: 'v2-proxy' as const },
      'https://api.example.com/oauth/v2/authorize?response_type=code&client_id=cid&state=x',
    ],
    [
      'oldest: client_id, optional redirect_uri and state',
      { baseUrl: 'https://api.example.com', ...common, variant: 'oldest' as const },
      'https://api.example.com/oauth/authorize?client_id=cid&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&state=s%201',
    ],
    [
      'former provider: the current parameters at /oauth2/v2/grant',
      { baseUrl: 'https://former.example.com', ...common, scope: 'a b', variant: 'former-provider' as const },
      'https://former.example.com/oauth2/v2/grant?response_type=code&client_id=cid&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&scope=a%20b&state=s%201',
    ],
  ])('%s', (_name, opts, expected) => {
    expect(buildAuthorizeUrl(opts)).toBe(expected);
  });

  it('never encodes a space as +', () => {
    expect(buildAuthorizeUrl({ baseUrl: 'https://a', ...common, scope: 'x y z' })).toContain('scope=x%20y%20z');
  });

  it.each([
    ['current without redirect_uri', { baseUrl: 'https://a', clientId: 'c' }],
    ['the implicit flow on the v2 proxy', { baseUrl: 'https://a', clientId: 'c', responseType: 'token' as const, variant: 'v2-proxy' as const }],
    ['the implicit flow on the oldest proxy', { baseUrl: 'https://a', clientId: 'c', responseType: 'token' as const, variant: 'oldest' as const }],
  ])('refuses %s', (_name, opts) => {
    expect(() => buildAuthorizeUrl(opts)).toThrow(TypeError);
  });
});

describe('redirects', () => {
  it('reads code and state, and checks the state', () => {
    expect(parseCodeRedirect('http://127.0.0.1:1/callback?code=abcd&state=s1', 's1')).toEqual({ code: 'abcd', state: 's1' });
    expect(() => parseCodeRedirect('http://127.0.0.1:1/callback?code=abcd&state=other', 's1')).toThrow(/different state/);
    expect(() => parseCodeRedirect('http://127.0.0.1:1/callback?state=s1', 's1')).toThrow(/no code/);
  });

  it('surfaces an error redirect', () => {
    const err = (() => {
      try {
        parseCodeRedirect('http://h/cb?error=access_denied&error_description=no&state=s', 's');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(AuthorizationResponseError);
    expect((err as AuthorizationResponseError).oauthError).toBe('access_denied');
  });

  it.each([
    [
      'current',
      'http://h/cb#access_token=AT12345&token_type=Bearer&expires_in=3600&principal=a%40b.c&scope=remoteview%3Bsettings&state=s',
      'current' as const,
    ],
    ['former provider', 'http://h/cb#access_token=AT12345&type=Bearer&expires_in=3600000&username=a%40b.c&scope=remoteview%3Bsettings&state=s', 'former-provider' as const],
  ])('reads the implicit fragment (%s) as one shape', (_n, url, variant) => {
    expect(parseImplicitRedirect(url, 's', variant)).toEqual({
      access_token: 'AT12345',
      token_type: 'Bearer',
      expires_in: 3600,
      principal: 'a@b.c',
      scope: 'remoteview;settings',
      variant,
      state: 's',
    });
  });
});
