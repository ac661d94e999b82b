import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Command, CommanderError } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as authCommand from '../../src/cli/commands/auth.js';
import * as sessionCommand from '../../src/cli/commands/session.js';
import * as whoamiCommand from '../../src/cli/commands/whoami.js';
import { reportFailure } from '../../src/cli/report-failure.js';
import { interfaceEmulatorEnv } from '../../src/emulator/interface/index.js';
import { startTestEmulator, type TestEmulator } from './helpers.js';

let t: TestEmulator;
let dir: string;
let tokenFile: string;
/** Everything any command printed, to check that no secret ever appears. */
let allOutput = '';

beforeEach(async () => {
  t = await startTestEmulator({ accessTokenTtlSeconds: 3600 });
  dir = await mkdtemp(join(tmpdir(), 'session-etl-cli-'));
  tokenFile = join(dir, 'config', 'tokens.json');
  allOutput = '';
});
afterEach(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the commands as `main()` does (same exit-code rules), with the environment pointing at the
 * emulator. `onStdoutLine` sees each printed line as it comes (the login test plays the browser).
 */
async function cli(args: string[], opts: { env?: Record<string, string>; onStdoutLine?: (line: string) => void } = {}): Promise<Run> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => {
    const text = c.toString();
    out += text;
    for (const line of text.split('\n')) if (line) opts.onStdoutLine?.(line);
  });
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const deps: authCommand.InterfaceCommandDeps = {
    env: { ...interfaceEmulatorEnv(t.base, t.options), SESSION_ETL_TOKEN_FILE: tokenFile, ...opts.env },
    stdout,
    stderr,
    now: t.now,
    openBrowser: async () => {
      throw new Error('no browser in tests');
    },
  };
  const program = new Command('session-etl').exitOverride();
  program.configureOutput({ writeOut: (s) => stdout.write(s), writeErr: (s) => stderr.write(s) });
  for (const m of [authCommand, whoamiCommand, sessionCommand]) m.register(program, deps);
  let code = 0;
  try {
    await program.parseAsync(['node', 'session-etl', ...args]);
  } catch (e) {
    code = e instanceof CommanderError ? (e.code === 'commander.helpDisplayed' ? 0 : 2) : reportFailure(e, stderr);
  }
  await new Promise((r) => setImmediate(r));
  allOutput += out + err;
  return { code, stdout: out, stderr: err };
}

/** `auth login --no-browser`, with the test playing the browser: it fetches the printed URL and follows the redirect to the loopback listener. */
async function login(extra: string[] = []): Promise<Run> {
  let browser: Promise<Response> | undefined;
  const run = await cli(['auth', 'login', '--no-browser', ...extra], {
    onStdoutLine: (line) => {
      if (line.startsWith('http')) browser = fetch(line);
    },
  });
  if (browser) {
    const page = await browser;
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Signed in');
  }
  return run;
}

async function storedSecrets(): Promise<string[]> {
  const stored = JSON.parse(await readFile(tokenFile, 'utf8')) as { accessToken: string; refreshToken: string };
  return [stored.accessToken, stored.refreshToken];
}

describe('session-etl auth', () => {
  it('login (loopback redirect), status, whoami, session start and end, logout — and no secret in any output', async () => {
    const li = await login(['--redirect-port', '0']);
    expect(li.code).toBe(0);
    expect(li.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?response_type=code&client_id=test-client&redirect_uri=http%3A%2F%2F127\.0\.0\.1%3A\d+%2Fcallback&scope=remoteview%3Bsettings&state=/m);
    expect(li.stdout).toContain('Signed in as agent@example.com.');
    expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);

    const st = await cli(['auth', 'status']);
    expect(st.stdout).toContain('Signed in as agent@example.com.');
    expect(st.stdout).toContain('scopes:        remoteview;settings');
    expect(st.stdout).toContain('valid for 60 min');
    expect(st.stdout).toContain('mode 0600');

    const who = await cli(['whoami']);
    expect(who.stdout).toContain('agent@example.com (Ada Agent)');
    expect(who.stdout).toContain('account keys: 1234567890123456789');

    const start = await cli(['session', 'start', '--customer-name', 'Ciara', '--webhook', 'https://hooks.example.com/a'], {
      env: { SESSION_ETL_WEBHOOK_TOKEN: 'hook-secret-9d8e7f' },
    });
    expect(start.code).toBe(0);
    expect(start.stdout).toMatch(/agent URL: +http:\/\/127\.0\.0\.1:\d+\/console\/session\//);
    expect(start.stdout).toMatch(/customer URL: +http:\/\/127\.0\.0\.1:\d+\/join\/\d+/);
    const id = /session id: +([0-9a-f-]{36})/.exec(start.stdout)?.[1];
    expect(id).toBeDefined();
    const created = t.state().sessions.get(id!)!;
    expect(created.request).toMatchObject({ customerName: 'Ciara', sourceApp: 'session-etl', webhooks: [{ targetUrl: 'https://hooks.example.com/a', authorizationToken: 'hook-secret-9d8e7f', type: 0 }] });

    const end = await cli(['session', 'end', id!, '--show-wrapup', '--end-source', 'cli']);
    expect(end.stdout).toContain(`Session ${id} ended (HTTP 204, DELETE).`);
    expect(created).toMatchObject({ showWrapup: true, endSource: 'cli' });

    const secrets = [...(await storedSecrets()), 'test-client-secret-5d1c8c79', 'hook-secret-9d8e7f'];
    const out = await cli(['auth', 'logout']);
    expect(out.stdout).toContain('Signed out');
    expect((await cli(['auth', 'status'])).stdout).toContain('Not signed in');
    for (const s of secrets) expect(allOutput).not.toContain(s);
  });

  it('commands refresh an expired token transparently, and rotate the stored refresh token', async () => {
    await t.close();
    t = await startTestEmulator({ refreshTokenTtlSeconds: 86400, rotateWhenRemainingBelowSeconds: 86400 }); // every refresh rotates
    await login();
    const [oldAccess, oldRefresh] = await storedSecrets();
    t.advance(2 * 3600);
    expect((await cli(['auth', 'status'])).stdout).toMatch(/access token: +expired 60 min ago/);
    const who = await cli(['whoami', '--json']);
    expect(JSON.parse(who.stdout)).toMatchObject({ userName: 'agent@example.com', accountKeys: ['1234567890123456789'] });
    const [newAccess, newRefresh] = await storedSecrets();
    expect(newAccess).not.toBe(oldAccess);
    expect(newRefresh).not.toBe(oldRefresh);
    expect(t.state().counters.grants.refresh_token).toBe(1);
    for (const s of [oldAccess!, oldRefresh!, newAccess!, newRefresh!]) expect(allOutput).not.toContain(s);
  });

  it('an expired refresh token: exit 4 and the message says to sign in again', async () => {
    await t.close();
    t = await startTestEmulator({ refreshTokenTtlSeconds: 7200, rotateWhenRemainingBelowSeconds: 0 });
    await login();
    t.advance(3 * 3600);
    const r = await cli(['session', 'start']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('error: sign-in required: the refresh token has expired or was replaced');
    expect(r.stderr).toContain('Run `session-etl auth login`');
    expect(r.stderr).toContain('caused by: the token service refused the refresh token: HTTP 400: invalid_grant');
  });

  it('not signed in, and missing settings', async () => {
    const r = await cli(['whoami']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('no tokens are stored');
    const missing = await cli(['whoami'], { env: { API_URL: '', OAUTH_CLIENT_SECRET: '' } });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing settings: OAUTH_CLIENT_SECRET, API_URL');
  });

  it('--json output of start and status', async () => {
    await login();
    const start = JSON.parse((await cli(['session', 'start', '--json'])).stdout) as Record<string, string>;
    expect(Object.keys(start)).toEqual(['agentUrl', 'clientUrl', 'sessionId']);
    const status = JSON.parse((await cli(['auth', 'status', '--json'])).stdout) as Record<string, unknown>;
    expect(status).toMatchObject({ signedIn: true, principal: 'agent@example.com', scopes: ['remoteview;settings'], hasRefreshToken: true, tokenFileMode: '0600' });
    for (const s of await storedSecrets()) expect(allOutput).not.toContain(s);
  });

  it('usage errors exit 2: a bad id, a bad method, a bad port', async () => {
    await login();
    expect((await cli(['session', 'end', 'not-a-uuid'])).code).toBe(2);
    expect((await cli(['session', 'end', '00000000-0000-4000-8000-000000000000', '--method', 'GET'])).code).toBe(2);
    expect((await cli(['auth', 'login', '--no-browser', '--redirect-port', 'x'])).code).toBe(2);
  });

  it('session end with --method sends that method; the console’s refusal is shown with its status', async () => {
    await t.close();
    t = await startTestEmulator({ endSessionMethods: ['POST'] });
    await login();
    const id = JSON.parse((await cli(['session', 'start', '--json'])).stdout).sessionId as string;
    const refused = await cli(['session', 'end', id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('ending the session failed: the console answered HTTP 405: {"message":"use POST"}');
    expect((await cli(['session', 'end', id, '--method', 'post'])).stdout).toContain('(HTTP 204, POST)');
  });
});
