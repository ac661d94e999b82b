/**
 * The command line as a new user and a BI user met it (issue 38 "What a new user and a BI user met",
 * issue 42's frictions): each test runs the built CLI and checks what a person sees.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/run.js';
import { writeAccountsConfig, sameKey } from '../helpers/accounts-config.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { REPO_ROOT, runCli, startCli, waitFor } from '../helpers/cli.js';
import { D, isoDay } from '../helpers/time.js';

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

describe('config diagnoses a key file that gives no key (issue 42 #9)', () => {
  it.skipIf(existsSync('/etc/session-etl/reporting.key'))('the shipped example whose key file is not on this machine: shown, the key file marked, exit 0', async () => {
    const r = await runCli(['config', '--config', join(REPO_ROOT, 'config', 'examples', 'one-account.json')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^apiKeyFile +"\/etc\/session-etl\/reporting\.key" +file {2}UNUSABLE: key file \/etc\/session-etl\/reporting\.key cannot be read: no such file$/m);
    expect(r.stdout).toMatch(/^scheduleCron +"0 2 \* \* \*" +file$/m);
    expect(r.stderr).toContain('warning: key file /etc/session-etl/reporting.key cannot be read: no such file (apiKeyFile)');
  });

  it('an empty key file and an account whose key file is missing are marked; a readable key is never printed; --json says the same', async () => {
    const dir = await fx.tempDir();
    const empty = join(dir, 'empty.key');
    const good = join(dir, 'good.key');
    await writeFile(empty, '\n', { mode: 0o600 });
    await writeFile(good, 'Kx9mP2qL7vR4nT8wQ3zS\n', { mode: 0o600 });
    const cfg = join(dir, 'c.json');
    await writeFile(cfg, JSON.stringify({ apiKeyFile: empty, accounts: { acme: { apiKeyFile: join(dir, 'missing.key') }, globex: { apiKeyFile: good } } }));
    const r = await runCli(['config', '--config', cfg]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`UNUSABLE: key file ${empty} `);
    expect(r.stdout).toMatch(new RegExp(`^ {2}acme {2}key from file ${dir}/missing\\.key \\(UNUSABLE: it cannot be read: no such file\\)`, 'm'));
    expect(r.stdout).toMatch(/^ {2}globex {2}key from file \S+good\.key$/m);
    const json = await runCli(['config', '--config', cfg, '--json']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { values: Array<{ key: string; problem?: string }>; accounts: Array<{ name: string; problem?: string }> };
    expect(parsed.values.find((v) => v.key === 'apiKeyFile')!.problem).toMatch(/^key file .*empty\.key /);
    expect(parsed.accounts.map((a) => [a.name, a.problem ?? null])).toEqual([['acme', 'cannot be read: no such file'], ['globex', null]]);
    for (const out of [r.stdout, r.stderr, json.stdout, json.stderr]) expect(out).not.toContain('Kx9mP2qL7vR4nT8wQ3zS');
  });

  it('export still refuses a missing key file with exit 2', async () => {
    const dir = await fx.tempDir();
    const r = await runCli(['export', '--data-dir', join(dir, 'd')], { REPORTING_URL: fx.emu.url, REPORTING_API_KEY_FILE: join(dir, 'nope.key') });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`REPORTING_API_KEY_FILE ${dir}/nope.key cannot be read: no such file`);
  });
});

describe('sessions: a table a person can read', () => {
  it('the default table shows a few columns (id, started, ended, duration, sessionType, agent.name), not all 21; --columns chooses', async () => {
    const r = await runCli(['sessions', '--data-dir', dataDir, '--output', 'table', '--page-size', '3']);
    expect(r.code).toBe(0);
    const [header, rule, ...rest] = r.stdout.split('\n');
    expect(header!.trim().split(/\s{2,}/)).toEqual(['id', 'started', 'ended', 'duration', 'sessionType', 'agent.name']);
    expect(rule).toMatch(/^-+( {2}-+){5}$/);
    expect(rest[0]).toMatch(/^[0-9a-f-]{36} {2}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}\d{4}-/);
    expect(r.stdout).toMatch(/^3 of \d+ sessions \(offset 0\); --columns to choose \(all: every field\)$/m);

    const some = await runCli(['sessions', '--data-dir', dataDir, '--output', 'table', '--page-size', '2', '--columns', 'pin,id']);
    expect(some.code).toBe(0);
    expect(some.stdout.split('\n')[0]!.trim().split(/\s{2,}/)).toEqual(['pin', 'id']);
    const all = await runCli(['sessions', '--data-dir', dataDir, '--output', 'table', '--page-size', '1', '--columns', 'all']);
    expect(all.stdout.split('\n')[0]!.trim().split(/\s{2,}/)).toHaveLength(21);
    // csv and json keep every field.
    const csv = await runCli(['sessions', '--data-dir', dataDir, '--output', 'csv', '--page-size', '1']);
    expect(csv.stdout.split('\n')[0]!.split(',')).toHaveLength(21);
  });

  it('reading many accounts, each session says its account (first column; json and csv too)', async () => {
    const dir = await fx.tempDir();
    const cfg = join(dir, 'accounts.json');
    await writeAccountsConfig(cfg, { dataDir: join(dir, 'data') }, sameKey(['acme', 'globex'], 'EMU_KEY', { reportingUrl: fx.emu.url }));
    const day = isoDay(FROM);
    const to = isoDay(FROM + D);
    const b = await runCli(['backfill', '--config', cfg, '--from', day, '--to', to, '--no-progress'], { EMU_KEY: fx.emu.apiKey });
    expect(b.code).toBe(0);
    const t = await runCli(['sessions', '--config', cfg, '--output', 'table', '--page-size', '1000']);
    expect(t.code).toBe(0);
    expect(t.stdout.split('\n')[0]!.trim().split(/\s{2,}/)).toEqual(['account', 'id', 'started', 'ended', 'duration', 'sessionType', 'agent.name']);
    const rows = t.stdout.split('\n').filter((l) => /^(acme|globex) {2,}[0-9a-f-]{36}/.test(l));
    expect(new Set(rows.map((l) => l.split(/\s+/)[0]))).toEqual(new Set(['acme', 'globex']));
    const json = await runCli(['sessions', '--config', cfg, '--output', 'json', '--page-size', '1000', '--attribute-names', 'id,pin']);
    const items = (JSON.parse(json.stdout) as { items: Array<Record<string, unknown>> }).items;
    expect(Object.keys(items[0]!)).toEqual(['account', 'id', 'pin']);
    expect(new Set(items.map((i) => i.account))).toEqual(new Set(['acme', 'globex']));
    const csv = await runCli(['sessions', '--config', cfg, '--output', 'csv', '--attribute-names', 'id,account']);
    expect(csv.stdout.split('\r\n')[0]).toBe('id,account');
    expect(csv.stderr).toBe('');
  });
});

describe('schedule: the start line says when each job runs next', () => {
  it('in the configured time zone and in UTC', async () => {
    const before = Date.now();
    const child = startCli(['schedule', '--cron', '0 * * * *', '--timezone', 'Asia/Kolkata', '--http-port', '0'], fx.env(dataDir));
    try {
      await waitFor(() => /runs next at/.test(child.output()) || child.exitCode !== null, 30_000, 'the start lines');
    } finally {
      child.kill('SIGTERM');
      await child.result;
    }
    // Every hour at :00 in Kolkata (UTC+05:30) is every hour at :30 in UTC: the next such instant.
    const halfHour = 30 * 60_000;
    const nextAfter = (t: number) => (Math.floor((t - halfHour) / 3_600_000) + 1) * 3_600_000 + halfHour;
    const line = (at: number) => {
      const utc = new Date(at).toISOString().replace('.000Z', 'Z');
      const local = new Date(at + 5.5 * 3_600_000).toISOString().slice(0, 16).replace('T', ' ');
      return `  nightly-export runs next at ${local} Asia/Kolkata (${utc})`;
    };
    const candidates = [line(nextAfter(before)), line(nextAfter(before) + 3_600_000)];
    const got = child.output().split('\n').find((l) => l.includes('runs next at'));
    expect(candidates).toContain(got);
  });
});
