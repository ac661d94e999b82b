import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { accountKeysOf, getCurrentUser } from '../../src/identity/get-current-user.js';
import { IdentityError } from '../../src/identity/errors/identity-error.js';
import { signIn, startTestEmulator, type TestEmulator } from '../auth/helpers.js';

let t: TestEmulator;
beforeEach(async () => {
  t = await startTestEmulator({ user: { userName: 'grace@example.com', givenName: 'Grace', familyName: 'Hopper', id: '42', accountKeys: ['A1', 'A2'] } });
});
afterEach(async () => t.close());

describe('current-user identity', () => {
  it('returns user name, names, id and account keys; no scope needed', async () => {
    const { access_token } = await signIn(t, { scope: '' });
    const me = await getCurrentUser({ apiUrl: t.base, accessToken: access_token });
    expect(me).toMatchObject({ userName: 'grace@example.com', givenName: 'Grace', familyName: 'Hopper', id: '42', accountKeys: ['A1', 'A2'] });
  });

  it('a refused token is an IdentityError with the status', async () => {
    const err = await getCurrentUser({ apiUrl: t.base, accessToken: 'emu-at-nope-1234' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdentityError);
    expect(err).toMatchObject({ status: 401, retryable: false });
  });

  it('an unreachable host is retryable', async () => {
    const err = await getCurrentUser({ apiUrl: 'http://127.0.0.1:9', accessToken: 'x' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'IdentityError', retryable: true, status: undefined });
  });
});

describe('accountKeysOf', () => {
  it.each([
    ['top-level accounts of objects', { accounts: [{ value: 'k1' }, { accountKey: 'k2' }] }, ['k1', 'k2']],
    ['a SCIM extension', { 'urn:scim:schemas:extension:x:1.0': { accounts: [{ value: 7 }] } }, ['7']],
    ['plain strings, deduplicated', { accounts: ['k1', 'k1', ''] }, ['k1']],
    ['none', { userName: 'u' }, []],
  ])('%s', (_n, record, keys) => {
    expect(accountKeysOf(record)).toEqual(keys);
  });
});
