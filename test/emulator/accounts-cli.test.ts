/** `session-etl emulator --accounts N` and `--accounts-file F` (issue 18). */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emulatorOptionsFromFlags, runEmulator, type EmulatorFlags } from '../../src/cli/commands/emulator.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { emulatorAccounts } from '../../src/emulator/index.js';
import { waitFor } from '../helpers/cli.js';

const DEFAULTS: EmulatorFlags = { host: '127.0.0.1', port: '0', seed: '1', sessionsPerDay: '200', windowRule: 'closed', argTypes: 'Int!' };
const FILE_ACCOUNTS = [
  { name: 'acme', apiKey: 'file-key-acme', sessionsPerDay: 50 },
  { name: 'globex', apiKey: 'file-key-globex', rateLimitRps: 10, latencyMs: 200, revoked: true },
];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'emu-accounts-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

function usageError(flags: Partial<EmulatorFlags>): Error {
  try {
    emulatorOptionsFromFlags({ ...DEFAULTS, ...flags });
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as Error;
  }
  throw new Error('expected a usage error');
}

describe('emulator account flags', () => {
  it('--accounts N serves the derived accounts of the seed', () => {
    expect(emulatorOptionsFromFlags({ ...DEFAULTS, accounts: '3', seed: '9' }).accounts).toEqual(emulatorAccounts(3, 9));
    expect(emulatorOptionsFromFlags(DEFAULTS).accounts).toBeUndefined();
  });

  it('--accounts-file reads a JSON list, bare or under "accounts"', async () => {
    const bare = await file('bare.json', JSON.stringify(FILE_ACCOUNTS));
    const wrapped = await file('wrapped.json', JSON.stringify({ accounts: FILE_ACCOUNTS }));
    expect(emulatorOptionsFromFlags({ ...DEFAULTS, accountsFile: bare }).accounts).toEqual(FILE_ACCOUNTS);
    expect(emulatorOptionsFromFlags({ ...DEFAULTS, accountsFile: wrapped }).accounts).toEqual(FILE_ACCOUNTS);
  });

  it.each([
    ['--accounts 0', { accounts: '0' }, /--accounts must be a whole number from 1/],
    ['--accounts many', { accounts: 'many' }, /--accounts must be/],
    ['both flags', { accounts: '2', accountsFile: '/nowhere.json' }, /--accounts and --accounts-file cannot be combined/],
    ['--api-key with --accounts', { accounts: '2', apiKey: 'k' }, /--api-key cannot be combined with --accounts/],
    ['a missing file', { accountsFile: '/nowhere/accounts.json' }, /--accounts-file \/nowhere\/accounts\.json cannot be read \(ENOENT\)/],
  ])('refuses %s with a usage error naming the flag', (_what, flags, message) => {
    expect(usageError(flags as Partial<EmulatorFlags>).message).toMatch(message);
  });

  it.each([
    ['not JSON', '[{ "name": "a", "apiKey": "dup-secret" ]', /is not valid JSON \(at character \d+\)/],
    ['not a list', '{ "acme": "k" }', /accounts must be a non-empty list/],
    ['a duplicate key', JSON.stringify([{ name: 'a', apiKey: 'dup-secret' }, { name: 'b', apiKey: 'dup-secret' }]), /accounts\[1\] \(b\)\.apiKey is the key of another account/],
    ['a bad name', JSON.stringify([{ name: 'ACME', apiKey: 'k' }]), /accounts\[0\]\.name must match/],
  ])('refuses a file with %s, naming the file and what is wrong (never the key)', async (what, text, message) => {
    const path = await file(`${what.replace(/\W+/g, '-')}.json`, text);
    const err = usageError({ accountsFile: path });
    expect(err.message).toContain(`--accounts-file ${path}`);
    expect(err.message).toMatch(message);
    expect(err.message).not.toContain('dup-secret');
  });
});

describe('emulator command with accounts', () => {
  it('prints the URL, then one line per account with its key, and serves each key', async () => {
    const path = await file('serve.json', JSON.stringify(FILE_ACCOUNTS));
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', (d: Buffer) => (out += d.toString()));
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const run = runEmulator({ ...DEFAULTS, accountsFile: path, now: '2026-01-15T14:00:00Z' }, { stdout, stderr: new PassThrough(), until: () => stopped });
    await waitFor(() => out.split('\n').length > 3, 5_000, 'the account lines');
    const lines = out.trimEnd().split('\n');
    const m = /^reporting endpoint: (http:\/\/127\.0\.0\.1:\d+\/) {2}accounts: 2$/.exec(lines[0]!);
    expect(m).not.toBeNull();
    expect(lines.slice(1)).toEqual(['account: acme  api key: file-key-acme', 'account: globex  api key: file-key-globex  (revoked)']);
    const ask = (key: string) => fetch(m![1]!, { method: 'POST', headers: { authorization: key }, body: JSON.stringify({ query: '{ sessions(start: 1768435200, end: 1768485600) { id } }' }) });
    expect((await ask('file-key-acme')).status).toBe(200);
    expect((await ask('file-key-globex')).status).toBe(401);
    stop();
    await run;
  });
});
