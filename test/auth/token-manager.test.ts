import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { exitCodeOf } from '../../src/index.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SignInRequiredError } from '../../src/auth/errors/sign-in-required-error.js';
import { FileTokenStore } from '../../src/auth/file-token-store.js';
import { TokenManager } from '../../src/auth/token-manager.js';
import { MemoryTokenStore, type TokenStore } from '../../src/auth/token-store.js';
import { signIn, startTestEmulator, type TestEmulator } from './helpers.js';
import { D as DAY } from '../helpers/time.js';

let t: TestEmulator;
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'session-etl-auth-'));
});
afterEach(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

async function signedInManager(store: TokenStore = new MemoryTokenStore()) {
  const client = t.client();
  const manager = new TokenManager({ client, store, now: t.now });
  await manager.storeLogin(await signIn(t));
  return { manager, store, client };
}

const HOUR = 3600;

describe('rotation', () => {
  it('a refresh near the refresh token’s expiry stores the new refresh token; the old one is then refused', async () => {
    t = await startTestEmulator({ refreshTokenTtlSeconds: 10 * DAY, rotateWhenRemainingBelowSeconds: 3 * DAY });
    const { manager, store, client } = await signedInManager();
    const before = (await store.load())!;
    t.advance(8 * DAY); // 2 days left: near expiry
    const after = await manager.getTokens();
    expect(after.refreshToken).toBeDefined();
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect((await store.load())!.refreshToken).toBe(after.refreshToken);
    // The old refresh token was invalidated by the new one.
    await expect(client.refresh(before.refreshToken!)).rejects.toMatchObject({ reason: 'refresh-token-invalid' });
    // The new one lives 10 days from its issue.
    t.advance(9 * DAY);
    await expect(manager.getAccessToken()).resolves.toMatch(/^emu-at-/);
  });

  it('a refresh far from expiry has no refresh_token: the old one is kept and stays valid', async () => {
    t = await startTestEmulator({ refreshTokenTtlSeconds: 30 * DAY, rotateWhenRemainingBelowSeconds: DAY });
    const { manager, store } = await signedInManager();
    const before = (await store.load())!;
    t.advance(2 * HOUR);
    const after = await manager.getTokens();
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).toBe(before.refreshToken);
    t.advance(2 * HOUR);
    await manager.getTokens();
    expect((await store.load())!.refreshToken).toBe(before.refreshToken);
    expect(t.state().counters.grants.refresh_token).toBe(2);
  });
});

describe('when to refresh', () => {
  it('uses the stored token while it is fresh, refreshes a minute before expiry', async () => {
    t = await startTestEmulator({ accessTokenTtlSeconds: HOUR });
    const { manager } = await signedInManager();
    const first = await manager.getAccessToken();
    t.advance(HOUR - 61);
    expect(await manager.getAccessToken()).toBe(first);
    t.advance(2); // 59 s left
    expect(await manager.getAccessToken()).not.toBe(first);
    expect(t.state().counters.grants.refresh_token).toBe(1);
  });

  it('a short-lived token is not refreshed on every call', async () => {
    t = await startTestEmulator({ accessTokenTtlSeconds: 30 });
    const { manager } = await signedInManager();
    const first = await manager.getAccessToken();
    t.advance(10);
    expect(await manager.getAccessToken()).toBe(first);
  });

  it('concurrent callers share one refresh', async () => {
    t = await startTestEmulator();
    const { manager } = await signedInManager();
    t.advance(2 * HOUR);
    const tokens = await Promise.all(Array.from({ length: 8 }, () => manager.getAccessToken()));
    expect(new Set(tokens).size).toBe(1);
    expect(t.state().counters.grants.refresh_token).toBe(1);
  });

  it('two managers on one token file (two processes): one refresh, the other adopts its result', async () => {
    t = await startTestEmulator({ rotateWhenRemainingBelowSeconds: 365 * DAY }); // every refresh rotates
    const path = join(dir, 'tokens.json');
    const { manager: a } = await signedInManager(new FileTokenStore(path));
    const b = new TokenManager({ client: t.client(), store: new FileTokenStore(path), now: t.now });
    t.advance(2 * HOUR);
    const [ta, tb] = await Promise.all([a.getAccessToken(), b.getAccessToken()]);
    expect(ta).toBe(tb);
    expect(t.state().counters.grants.refresh_token).toBe(1);
  });
});

describe('sign-in required', () => {
  it('when the refresh token has expired', async () => {
    t = await startTestEmulator({ refreshTokenTtlSeconds: 2 * DAY, rotateWhenRemainingBelowSeconds: 0 });
    const { manager } = await signedInManager();
    t.advance(3 * DAY);
    const err = await manager.getAccessToken().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SignInRequiredError);
    expect(err).toMatchObject({ reason: 'refresh-token-invalid', status: 400, retryable: false });
    expect((err as Error).message).toMatch(/sign-in required: .*Run `session-etl auth login`/);
  });

  it('when the stored refresh token is the former provider’s', async () => {
    t = await startTestEmulator();
    const store = new MemoryTokenStore();
    const manager = new TokenManager({ client: t.client(), store, now: t.now });
    const former = await signIn(t, { variant: 'former-provider' });
    // Tokens carried over from the former provider, now used with the current service.
    await manager.storeLogin({ ...former, variant: 'current' });
    t.advance(3 * HOUR);
    await expect(manager.getAccessToken()).rejects.toMatchObject({ name: 'SignInRequiredError', reason: 'former-provider-token' });
  });

  it('when nothing is stored, or the tokens belong to another service', async () => {
    t = await startTestEmulator();
    const store = new MemoryTokenStore();
    const manager = new TokenManager({ client: t.client(), store, now: t.now });
    await expect(manager.getAccessToken()).rejects.toMatchObject({ reason: 'not-signed-in' });
    await manager.storeLogin(await signIn(t));
    const other = new TokenManager({ client: t.client(), store, now: t.now });
    expect(await other.getAccessToken()).toMatch(/^emu-at-/);
    const saved = (await store.load())!;
    await store.save({ ...saved, authUrl: 'https://elsewhere.example.com' });
    await expect(manager.getAccessToken()).rejects.toMatchObject({ reason: 'other-service' });
  });
});

describe('FileTokenStore', () => {
  it('writes mode 0600 (also over an existing file with a wider mode) and reads it back', async () => {
    t = await startTestEmulator();
    const path = join(dir, 'nested', 'tokens.json');
    await signedInManager(new FileTokenStore(path));
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'nested'))).mode & 0o777).toBe(0o700);
    await writeFile(path, await readFile(path), { mode: 0o644 });
    const store = new FileTokenStore(path);
    await store.save((await store.load())!);
    expect(await store.mode()).toBe(0o600);
  });

  it('a token file every user can read is refused (exit 2), naming it, its mode and chmod 600; no token shown', async () => {
    t = await startTestEmulator();
    const path = join(dir, 'open', 'tokens.json');
    await signedInManager(new FileTokenStore(path));
    const text = await readFile(path, 'utf8');
    await chmod(path, 0o644);
    const err = await new FileTokenStore(path).load().then(() => null, (e: unknown) => e);
    expect(exitCodeOf(err)).toBe(2);
    expect((err as Error).message).toBe(
      `token file ${path} is readable by every user of this machine (mode 0644): a token file must be readable by its owner only (or its group); run chmod 600 ${path}`,
    );
    const tokens = JSON.parse(text) as Record<string, unknown>;
    for (const v of Object.values(tokens)) if (typeof v === 'string' && v.length > 8) expect((err as Error).message).not.toContain(v);
    await chmod(path, 0o600);
    expect(await new FileTokenStore(path).load()).toBeDefined();
  });

  it('a damaged file reads as "not signed in"', async () => {
    const path = join(dir, 'tokens.json');
    await writeFile(path, '{ not json', { mode: 0o600 });
    expect(await new FileTokenStore(path).load()).toBeUndefined();
    await new FileTokenStore(path).clear();
    await new FileTokenStore(path).clear();
  });
});
