/**
 * The command line as a new user and a BI user met it (issue 38 "What a new user and a BI user met",
 * issue 42's frictions): each test runs the built CLI and checks what a person sees.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/run.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';

const D = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;
const TO = FROM + 2 * D;

const fx = useEmulator({ seed: 38, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-surface-' });
let dataDir: string;

beforeAll(async () => {
  dataDir = await fx.tempDir();
  await runBackfill({ reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', from: FROM, to: TO, now: () => NOW * 1000 });
});

describe('sessions: a filter or sort on a field that does not exist is a usage error', () => {
  it('--ascending durtion=false exits 2 naming the flag, the nearest field and the fields', async () => {
    const r = await runCli(['sessions', '--data-dir', dataDir, '--output', 'json', '--ascending', 'durtion=false']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('--ascending: no session field is called durtion (did you mean duration?)');
    expect(r.stderr).toMatch(/the session fields are: id, companyId, pin, started, ended, duration, sessionType/);
  });

  it('--filter on an unknown field exits 2 naming the fields, instead of printing nothing with exit 0', async () => {
    const r = await runCli(['sessions', '--data-dir', dataDir, '--output', 'json', '--filter', 'sesionType="chat"']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('--filter: no session field is called sesionType (did you mean sessionType?)');
    expect(r.stderr).toContain('the session fields are: id, companyId');
  });
});

describe('did-you-mean for an account and a time zone', () => {
  it('--account initec: exit 2, "did you mean initech?"', async () => {
    const dir = await fx.tempDir();
    const cfg = join(dir, 'accounts.json');
    const accounts = Object.fromEntries(['acme', 'globex', 'initech'].map((a) => [a, { apiKeyEnv: `${a.toUpperCase()}_KEY` }]));
    await writeFile(cfg, JSON.stringify({ dataDir: join(dir, 'data'), accounts }));
    const r = await runCli(['status', '--config', cfg, '--account', 'initec']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no account called "initec" (did you mean initech?) in the configuration; configured: acme, globex, initech');
  });

  it('--timezone Europe/Berln: exit 2, naming the flag and "did you mean Europe/Berlin?"', async () => {
    const r = await runCli(['schedule', '--data-dir', await fx.tempDir(), '--timezone', 'Europe/Berln']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--timezone (from command line): got "Europe/Berln"; expected an IANA time zone such as UTC or Europe/Berlin (did you mean Europe/Berlin?)');
  });
});
