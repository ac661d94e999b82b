/**
 * The sign-in's defences: PKCE (S256) between the authorize page and the code exchange, callbacks
 * that are not ours ignored (and their text never printed raw), and a token directory others could
 * write to. Against the emulator's token service on loopback.
 */
import { mkdir, mkdtemp, rm, stat, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAuthorizeUrl } from '../../src/auth/authorize-url.js';
import { FileTokenStore } from '../../src/auth/file-token-store.js';
import { loginWithLoopback } from '../../src/auth/loopback-login.js';
import { createPkcePair } from '../../src/auth/pkce.js';
import { parseCodeRedirect } from '../../src/auth/redirect.js';
import { authorizeRedirect, CLIENT_ID, startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
const dirs: string[] = [];
beforeAll(async () => {
  t = await startTestEmulator();
});
afterAll(async () => {
  await t.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('PKCE', () => {
  it('the loopback login sends an S256 challenge and exchanges the code with its verifier', async () => {
    let seen = '';
    const r = await loginWithLoopback({
      client: t.client(),
      openUrl: async (url) => {
        seen = url;
        await fetch(await authorizeRedirect(url));
      },
    });
    expect(r.tokens.access_token).toMatch(/^emu-at-/);
    const q = new URL(seen).searchParams;
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('the emulated token endpoint refuses a code asked for with a challenge when the verifier is missing or wrong', async () => {
    const redirectUri = 'http://127.0.0.1:9/callback';
    const pkce = createPkcePair();
    const ask = async () => {
      const url = buildAuthorizeUrl({ baseUrl: t.base, clientId: CLIENT_ID, redirectUri, scope: 'remoteview;settings', state: 's', codeChallenge: pkce.challenge });
      return parseCodeRedirect(await authorizeRedirect(url), 's').code;
    };
    await expect(t.client().exchangeCode(await ask(), redirectUri)).rejects.toThrow(/code_verifier is missing/);
    await expect(t.client().exchangeCode(await ask(), redirectUri, createPkcePair().verifier)).rejects.toThrow(/code_verifier does not match/);
    const ok = await t.client().exchangeCode(await ask(), redirectUri, pkce.verifier);
    expect(ok.access_token).toMatch(/^emu-at-/);
  });
});

describe('the loopback callback', () => {
  it('a callback without our state (an attacker’s error page) is ignored, and the real answer still signs in', async () => {
    let hostile: Response | undefined;
    const r = await loginWithLoopback({
      client: t.client(),
      openUrl: async (url) => {
        const redirectUri = new URL(url).searchParams.get('redirect_uri')!;
        hostile = await fetch(`${redirectUri}?error=${encodeURIComponent('\x1b]0;pwned\x07\x1b[31mevil')}`);
        await fetch(await authorizeRedirect(url));
      },
    });
    expect(hostile!.status).toBe(400);
    expect(r.tokens.access_token).toMatch(/^emu-at-/);
  });

  it('an error that carries our state ends the login, its text stripped of control characters', async () => {
    const err = await loginWithLoopback({
      client: t.client(),
      openUrl: async (url) => {
        const q = new URL(url).searchParams;
        await fetch(`${q.get('redirect_uri')}?state=${q.get('state')}&error=access_denied&error_description=${encodeURIComponent('no\x1b[2J\x1b]0;title\x07 way')}`);
      },
    }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('access_denied');
    // eslint-disable-next-line no-control-regex
    expect((err as Error).message).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });
});

describe('the token directory', () => {
  it('an existing directory others can write to is made 0700 before tokens go in', async () => {
    const root = await mkdtemp(join(tmpdir(), 'session-etl-tokens-'));
    dirs.push(root);
    const dir = join(root, 'session-etl');
    await mkdir(dir);
    await chmod(dir, 0o777);
    const store = new FileTokenStore(join(dir, 'tokens.json'));
    await store.save({ accessToken: 'at-x', refreshToken: 'rt-x', tokenType: 'bearer', expiresAt: 2_000_000_000, scope: 's', variant: 'current' } as never);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await store.mode()).toBe(0o600);
  });
});
