/**
 * Many accounts (issue 18, docs/accounts.md), through the real CLI: one emulator per account (each
 * its own key and seed, reached through the account's reportingUrl override), real DuckDB files,
 * and the whole dataset read back with DuckDB and with hyparquet.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { fnv1a32, shardOf } from '../../src/accounts/select.js';
import type { Emulator } from '../../src/emulator/index.js';
import { openDb, queryRows } from '../../src/store/duckdb.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { writeAccountsConfig, sameKey } from '../helpers/accounts-config.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { startDashboardCli } from '../dashboard/fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 6 * D;
const TO = FROM + 3 * D;

const emus: Record<string, Emulator> = {};
const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-accounts-'));
  dirs.push(d);
  return d;
}

const fxs = ['acme', 'globex', 'initech'].map(
  (name, i) => [name, useEmulator({ seed: 11 + i, apiKey: `key-of-${name}`, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-accounts-' })] as const,
);
beforeAll(() => {
  for (const [name, f] of fxs) emus[name] = f.emu;
});
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A configuration with these accounts (keys in files for acme, in the environment for the others). */
async function setup(names: string[] = ['acme', 'globex', 'initech'], extra: Record<string, Record<string, unknown>> = {}) {
  const root = await tempDir();
  const accounts: Record<string, unknown> = {};
  const env: Record<string, string> = {};
  for (const name of names) {
    const emu = emus[name]!;
    if (name === 'acme') {
      await writeFile(join(root, 'acme.key'), `${emu.apiKey}\n`, { mode: 0o600 });
      accounts[name] = { apiKeyFile: join(root, 'acme.key'), reportingUrl: emu.url, ...extra[name] };
    } else {
      const v = `${name.toUpperCase()}_KEY`;
      env[v] = emu.apiKey;
      accounts[name] = { apiKeyEnv: v, reportingUrl: emu.url, ...extra[name] };
    }
  }
  const config = join(root, 'config.json');
  const write = (acc: Record<string, unknown>) => writeFile(config, JSON.stringify({ dataDir: join(root, 'data'), accounts: acc }));
  await write(accounts);
  return { root, data: join(root, 'data'), config, env, accounts, write };
}

function truth(name: string, from = FROM, to = TO) {
  return emus[name]!.dataset.sessionsStartedIn(from, to).map((s) => s.id).sort();
}

/** The stored sessions of `account` that started in [from, to) (a window may also bring sessions of its edges). */
function storedIn(rows: DatasetRow[], account: string, from = FROM, to = TO): string[] {
  return rows.filter((x) => x.account === account && x.started >= from && x.started < to).map((x) => x.session_id).sort();
}

/**
 * Every Parquet file of the dataset, read with hyparquet: the rows carry `account`, the date comes
 * from the path (Hive partitioning), and `file` names the store's file it is in (part-0, part-I-of-N).
 */
type DatasetRow = { account: string; date: string; file: string; session_id: string; started: number };
async function readDataset(data: string): Promise<DatasetRow[]> {
  const root = join(data, 'parquet', 'sessions');
  const out: DatasetRow[] = [];
  for (const d of (await readdir(root)).sort()) {
    expect(d).toMatch(/^date=\d{4}-\d\d-\d\d$/);
    for (const f of (await readdir(join(root, d))).sort()) {
      const buf = await asyncBufferFromFile(join(root, d, f));
      const rows = (await parquetReadObjects({ file: buf, metadata: await parquetMetadataAsync(buf), compressors })) as Array<Record<string, unknown>>;
      for (const r of rows) {
        out.push({ account: String(r.account), date: d.replace(/^date=/, ''), file: f, session_id: String(r.session_id), started: (r.started_at as Date).getTime() / 1000 });
      }
    }
  }
  return out;
}

/** The accounts the store(s) of a data directory hold, from `status --json`. */
async function storedAccounts(s: { config: string; env: Record<string, string> }): Promise<string[]> {
  const r = await runCli(['status', '--config', s.config, '--json'], s.env);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { accounts: Array<{ account: string; status: unknown }> }).accounts.filter((a) => a.status !== null).map((a) => a.account);
}

const backfill = (s: { config: string; env: Record<string, string> }, ...args: string[]) =>
  runCli(['backfill', '--config', s.config, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'error', ...args], s.env);

describe('many accounts', () => {
  it('backfills every account into one store and one date-partitioned dataset whose rows carry the account, read by DuckDB and hyparquet', async () => {
    const s = await setup();
    const r = await backfill(s);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { accounts: Array<{ account: string; outcome: string; summary: { sessions: { written: number } } }>; total: Record<string, unknown> };
    expect(out.accounts.map((a) => [a.account, a.outcome])).toEqual([['acme', 'succeeded'], ['globex', 'succeeded'], ['initech', 'succeeded']]);
    expect(out.total).toMatchObject({ accounts: 3, succeeded: 3, failed: 0 });
    // One store for the three accounts, one file per day (sorted by account, then start).
    expect(readdirSync(s.data).filter((f) => !f.startsWith('.')).sort()).toEqual(['all-accounts.duckdb', 'parquet', 'sessions.duckdb', 'state.json']);
    const days = readdirSync(join(s.data, 'parquet', 'sessions')).sort();
    for (const d of days) expect(readdirSync(join(s.data, 'parquet', 'sessions', d))).toEqual(['part-0.parquet']);
    const store = await openDb(join(s.data, 'sessions.duckdb'), { readOnly: true, allowedDirectories: [s.data] });
    try {
      const perAccount = await queryRows<{ account: string; n: number }>(store.conn, 'SELECT account, count(*)::INT AS n FROM sessions GROUP BY 1 ORDER BY 1');
      const runs = await queryRows<{ account: string; outcome: string }>(store.conn, 'SELECT account, outcome FROM _runs ORDER BY account');
      expect(runs).toEqual(['acme', 'globex', 'initech'].map((account) => ({ account, outcome: 'succeeded' })));
      expect(perAccount.map((p) => p.account)).toEqual(['acme', 'globex', 'initech']);
    } finally {
      store.close();
    }

    // hyparquet: every account's sessions, and only its own.
    const rows = await readDataset(s.data);
    for (const name of ['acme', 'globex', 'initech']) {
      expect(storedIn(rows, name)).toEqual(truth(name));
      expect(new Set(rows.filter((x) => x.account === name).map((x) => x.session_id)).size).toBe(rows.filter((x) => x.account === name).length);
    }
    // DuckDB: the all-accounts view, and read_parquet over the dataset with hive partitioning.
    const db = await openDb(join(s.data, 'all-accounts.duckdb'), { readOnly: true, allowedDirectories: [s.data] });
    try {
      const viaView = await queryRows<{ account: string; n: number }>(db.conn, 'SELECT account, count(*)::INT AS n FROM sessions GROUP BY 1 ORDER BY 1');
      expect(viaView).toEqual(['acme', 'globex', 'initech'].map((a) => ({ account: a, n: rows.filter((x) => x.account === a).length })));
      // Within a day's file the rows are sorted by account: each account's rows are one run.
      for (const d of days) {
        const order = rows.filter((x) => x.date === d.replace('date=', '')).map((x) => x.account);
        expect(order).toEqual([...order].sort());
      }
      const glob = join(s.data, 'parquet', 'sessions', '*', '*.parquet');
      const direct = await queryRows<{ account: string; ids: string[] }>(
        db.conn,
        `SELECT account, list(session_id ORDER BY session_id) AS ids FROM read_parquet('${glob}', hive_partitioning = true)
         WHERE started_at >= to_timestamp(${FROM}) AND started_at < to_timestamp(${TO}) GROUP BY 1 ORDER BY 1`,
      );
      expect(direct.map((d) => [d.account, [...d.ids]])).toEqual(['acme', 'globex', 'initech'].map((a) => [a, truth(a)]));
    } finally {
      db.close();
    }
  });

  it('--account runs only the named accounts; an unknown name exits 2 naming the configured ones and writes nothing', async () => {
    const s = await setup();
    const r = await backfill(s, '--account', 'globex', '--account', 'initech');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { accounts: Array<{ account: string }> }).accounts.map((a) => a.account)).toEqual(['globex', 'initech']);
    expect(await storedAccounts(s)).toEqual(['globex', 'initech']);
    expect([...new Set((await readDataset(s.data)).map((x) => x.account))].sort()).toEqual(['globex', 'initech']);

    const s2 = await setup();
    const bad = await backfill(s2, '--account', 'acme', '--account', 'umbrella');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/no account called "umbrella".*configured: acme, globex, initech/);
    expect(existsSync(s2.data)).toBe(false);
  });

  it('shards cut the accounts by FNV-1a 32-bit of the name modulo N: each shard writes its own store and its own file of each day; run at once, their union is every account once', async () => {
    // Six accounts on one emulator (the same key): the cut, not the data, is under test here.
    const root = await tempDir();
    const names = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark-industries'];
    const config = join(root, 'config.json');
    const data = join(root, 'data');
    await writeAccountsConfig(config, { dataDir: data }, sameKey(names, 'K', { reportingUrl: emus.acme!.url }));
    const env = { K: emus.acme!.apiKey };
    const s = { config, env };
    // The documented hash: FNV-1a 32-bit over the UTF-8 bytes (published test vectors).
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
    const N = 3;
    const shardArgs = (i: number, n: number = N) => ['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--shard', `${i}/${n}`, '--json', '--log-level', 'error'];
    // Shard 0 alone: its own store and, in each day, its own file holding its accounts only.
    const first = await runCli(shardArgs(0), env);
    expect(first.code).toBe(0);
    const own = names.filter((n) => shardOf(n, N) === 0).sort();
    expect(own.length).toBeGreaterThan(0);
    expect(readdirSync(join(data, 'shards'))).toEqual(['0-of-3']);
    expect(existsSync(join(data, 'sessions.duckdb'))).toBe(false);
    let rows = await readDataset(data);
    expect(new Set(rows.map((x) => x.file))).toEqual(new Set(['part-0-of-3.parquet']));
    expect([...new Set(rows.map((x) => x.account))].sort()).toEqual(own);
    // Then every shard at the same time on the same data directory (shard 0 again: nothing new to do there).
    const runs = await Promise.all(Array.from({ length: N }, (_, i) => runCli(shardArgs(i), env)));
    const seen: string[][] = runs.map((r, i) => {
      if (names.some((n) => shardOf(n, N) === i)) expect(r.stderr).toBe('');
      else expect(r.stderr).toMatch(new RegExp(`--shard ${i}/${N} holds none of the 6 configured accounts`));
      expect(r.code).toBe(0);
      return (JSON.parse(r.stdout) as { accounts: Array<{ account: string }> }).accounts.map((a) => a.account);
    });
    seen.forEach((shard, i) => expect(shard).toEqual(names.filter((n) => shardOf(n, N) === i).sort()));
    expect(seen.flat().sort()).toEqual([...names].sort());
    // A shard whose accounts are none has nothing to store.
    expect(readdirSync(join(data, 'shards')).sort()).toEqual([0, 1, 2].filter((i) => names.some((n) => shardOf(n, N) === i)).map((i) => `${i}-of-3`));
    rows = await readDataset(data);
    const once = (all: DatasetRow[]) => {
      for (const n of names) {
        // Every account reads acme's emulator here.
        expect(storedIn(all, n, FROM, FROM + D)).toEqual(truth('acme', FROM, FROM + D));
        const mine = all.filter((x) => x.account === n);
        expect(new Set(mine.map((x) => x.session_id)).size).toBe(mine.length);
      }
    };
    once(rows);
    for (const n of names) expect(new Set(rows.filter((x) => x.account === n).map((x) => x.file))).toEqual(new Set([`part-${shardOf(n, N)}-of-3.parquet`]));

    // Two shards instead of three, both at once: each moves its accounts out of the three stores
    // (nothing fetched again); the old stores and their files go; every session is there once.
    const resharded = await Promise.all([0, 1].map((i) => runCli(['export', '--config', config, '--shard', `${i}/2`, '--json', '--log-level', 'error'], env)));
    for (const r of resharded) {
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      // Each account continued from its checkpoint (kept by the move): its export starts a lookback before it.
      for (const a of (JSON.parse(r.stdout) as { accounts: Array<{ summary: { range: { from: string } } }> }).accounts) {
        expect(Date.parse(a.summary.range.from) / 1000).toBe(FROM);
      }
    }
    expect(readdirSync(join(data, 'shards')).sort()).toEqual([0, 1].filter((i) => names.some((n) => shardOf(n, 2) === i)).map((i) => `${i}-of-2`));
    rows = await readDataset(data);
    once(rows);
    for (const n of names) expect(new Set(rows.filter((x) => x.account === n).map((x) => x.file))).toEqual(new Set([`part-${shardOf(n, 2)}-of-2.parquet`]));
    // And back to one store (one shard: 0/1): `accounts migrate` moves them without a run; the shards go.
    const migrate = await runCli(['accounts', 'migrate', '--config', config, '--shard', '0/1', '--json'], env);
    expect(migrate.stderr).toBe('');
    expect(migrate.code).toBe(0);
    expect((JSON.parse(migrate.stdout) as { moved: Array<{ account: string }> }).moved.map((m) => m.account).sort()).toEqual([...names].sort());
    expect(existsSync(join(data, 'shards'))).toBe(false);
    rows = await readDataset(data);
    once(rows);
    expect(new Set(rows.map((x) => x.file))).toEqual(new Set(['part-0.parquet']));
    expect((await storedAccounts(s)).sort()).toEqual([...names].sort());

    for (const shard of ['3/3', '1/0', 'x', '-1/2', '1/2/3']) {
      const r = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--shard', shard], env);
      expect({ shard, code: r.code }).toEqual({ shard, code: 2 });
      expect(r.stderr).toMatch(/--shard/);
    }
  }, 240_000);

  it('an account with a wrong key fails alone: the others complete, exit 1 names it, the key is never printed', async () => {
    const s = await setup();
    s.env.GLOBEX_KEY = 'revoked-key-4711';
    const r = await backfill(s);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/1 of 3 accounts failed: globex/);
    expect(r.stdout + r.stderr).not.toContain('revoked-key-4711');
    expect(r.stdout + r.stderr).not.toContain(emus.acme!.apiKey);
    const out = JSON.parse(r.stdout) as { accounts: Array<{ account: string; outcome: string }>; total: { failedAccounts: string[] } };
    expect(out.accounts.map((a) => [a.account, a.outcome])).toEqual([['acme', 'succeeded'], ['globex', 'failed'], ['initech', 'succeeded']]);
    expect(out.total.failedAccounts).toEqual(['globex']);
    const rows = await readDataset(s.data);
    expect(storedIn(rows, 'acme')).toEqual(truth('acme'));
    expect(storedIn(rows, 'initech')).toEqual(truth('initech'));
    expect(rows.some((x) => x.account === 'globex')).toBe(false);

    // A key that cannot be read at all (missing variable) fails that account the same way.
    delete s.env.GLOBEX_KEY;
    const r2 = await backfill(s, '--account', 'globex', '--account', 'initech');
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/globex: .*GLOBEX_KEY \(apiKeyEnv\) is not set/);
    // ... and is recorded as its failed run: status and --check say so (the others stay healthy).
    const st = await runCli(['status', '--config', s.config, '--json'], s.env);
    const accounts = (JSON.parse(st.stdout) as { accounts: Array<{ account: string; status: { lastRuns: Array<{ outcome: string; error: string }> } | null }> }).accounts;
    const globex = accounts.find((a) => a.account === 'globex')!.status!;
    expect(globex.lastRuns[0]).toMatchObject({ outcome: 'failed' });
    expect(globex.lastRuns[0]!.error).toMatch(/GLOBEX_KEY \(apiKeyEnv\) is not set/);
    const check = await runCli(['status', '--config', s.config, '--check', '--max-lag', '30d'], s.env);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/UNHEALTHY: account globex: last run \S+ \(backfill\) failed/);
    expect(check.stdout).not.toMatch(/account (acme|initech)/);
  });

  it("a refused key: the advice names the account's own key source (its apiKeyEnv or apiKeyFile), not REPORTING_API_KEY", async () => {
    const s = await setup(['acme', 'globex']);
    s.env.GLOBEX_KEY = 'revoked-key-of-globex';
    await writeFile(join(s.root, 'acme.key'), 'revoked-key-of-acme\n', { mode: 0o600 });
    const r = await backfill(s);
    expect(r.code).toBe(1);
    const line = (name: string) => r.stderr.split('\n').find((l) => l.startsWith(`  ${name}: `)) ?? '';
    expect(line('globex')).toMatch(/HTTP 401\): check account globex's key, the environment variable GLOBEX_KEY \(its apiKeyEnv\): it must be/);
    expect(line('acme')).toContain(`HTTP 401): check account acme's key file ${join(s.root, 'acme.key')} (its apiKeyFile): it must be`);
    expect(r.stderr).not.toContain('REPORTING_API_KEY');
    expect(r.stdout + r.stderr).not.toMatch(/revoked-key-of-(globex|acme)/);
  });

  it('an account added later is backfilled from its startDate on the next export', async () => {
    const s = await setup(['acme']);
    const first = await runCli(['export', '--config', s.config, '--since', isoDay(FROM), '--json', '--log-level', 'error'], s.env);
    expect(first.code).toBe(0);
    const start = FROM + 2 * D;
    await s.write({ ...s.accounts, globex: { apiKeyEnv: 'GLOBEX_KEY', reportingUrl: emus.globex!.url, startDate: isoDay(start) } });
    const second = await runCli(['export', '--config', s.config, '--json', '--log-level', 'error'], { ...s.env, GLOBEX_KEY: emus.globex!.apiKey });
    expect(second.stderr).toBe('');
    expect(second.code).toBe(0);
    const out = JSON.parse(second.stdout) as { accounts: Array<{ account: string; summary: { range: { from: string } } }> };
    const globex = out.accounts.find((a) => a.account === 'globex')!;
    expect(globex.summary.range.from).toBe(new Date(start * 1000).toISOString().replace('.000Z', 'Z'));
    const rows = await readDataset(s.data);
    expect(storedIn(rows, 'globex', start, start + 2 * D)).toEqual(truth('globex', start, start + 2 * D));
    expect(rows.some((x) => x.account === 'globex' && x.started < start - D)).toBe(false);
    expect(storedIn(rows, 'globex', 0, start)).toEqual([]);
  });

  it('refuses an apiKey written in an account entry, and `config` shows where each key comes from, never the key', async () => {
    const s = await setup(['acme', 'globex']);
    const bad = join(s.root, 'bad.json');
    await writeFile(bad, JSON.stringify({ dataDir: s.data, accounts: { acme: { apiKey: 'secret-in-file-123' } } }));
    const r = await runCli(['export', '--config', bad], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/account "acme" holds apiKey.*apiKeyFile.*apiKeyEnv/);
    expect(r.stderr).not.toContain('secret-in-file-123');
    const badName = join(s.root, 'bad-name.json');
    await writeFile(badName, JSON.stringify({ accounts: { 'Acme Corp': { apiKeyEnv: 'X' } } }));
    const r2 = await runCli(['config', '--config', badName], {});
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/account name is 1 to 63 characters/);

    const c = await runCli(['config', '--config', s.config, '--json'], s.env);
    expect(c.code).toBe(0);
    const shown = JSON.parse(c.stdout) as { accounts: Array<{ name: string; key: Record<string, string> }> };
    expect(shown.accounts.map((a) => [a.name, a.key])).toEqual([
      ['acme', { from: 'file', path: join(s.root, 'acme.key') }],
      ['globex', { from: 'env', variable: 'GLOBEX_KEY' }],
    ]);
    expect(c.stdout).not.toContain(emus.acme!.apiKey);
  });

  it('status reports each account and a total; --check is unhealthy when one account is', async () => {
    const s = await setup(['acme', 'globex']);
    expect((await backfill(s, '--account', 'acme')).code).toBe(0);
    const st = await runCli(['status', '--config', s.config, '--json'], s.env);
    expect(st.code).toBe(0);
    const j = JSON.parse(st.stdout) as { accounts: Array<{ account: string; status: { rows: number } | null }>; total: { rows: number; withData: number } };
    const acmeRows = (await readDataset(s.data)).length;
    expect(acmeRows).toBeGreaterThanOrEqual(truth('acme').length);
    expect(j.accounts.map((a) => [a.account, a.status?.rows ?? null])).toEqual([['acme', acmeRows], ['globex', null]]);
    expect(j.total).toMatchObject({ withData: 1, rows: acmeRows });
    const check = await runCli(['status', '--config', s.config, '--check', '--max-lag', '30d'], s.env);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/UNHEALTHY: account globex/);
    expect(check.stdout).not.toMatch(/account acme/);
    expect((await runCli(['status', '--config', s.config, '--check', '--max-lag', '30d', '--account', 'acme'], s.env)).code).toBe(0);
  });

  it('adopts a single-account data directory as one account, in place, without fetching again', async () => {
    const s = await setup(['acme']);
    const single = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--log-level', 'error'], {
      REPORTING_URL: emus.acme!.url,
      REPORTING_API_KEY: emus.acme!.apiKey,
      SESSION_ETL_DATA_DIR: s.data,
    });
    expect(single.code).toBe(0);
    // The configuration with accounts refuses the directory until it is adopted.
    const refused = await backfill(s);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/single-account data.*accounts adopt NAME/);
    const adopt = await runCli(['accounts', 'adopt', 'acme', '--config', s.config], {});
    expect(adopt.stderr).toBe('');
    expect(adopt.code).toBe(0);
    expect(readdirSync(s.data).filter((f) => !f.startsWith('.')).sort()).toEqual(['parquet', 'sessions.duckdb', 'state.json']);
    const adopted = await readDataset(s.data);
    expect(new Set(adopted.map((x) => x.account))).toEqual(new Set(['acme']));
    expect(storedIn(adopted, 'acme')).toEqual(truth('acme'));
    // A single-account run now refuses the directory that holds accounts.
    const singleAgain = await runCli(['export'], { REPORTING_URL: emus.acme!.url, REPORTING_API_KEY: emus.acme!.apiKey, SESSION_ETL_DATA_DIR: s.data });
    expect(singleAgain.code).toBe(2);
    expect(singleAgain.stderr).toMatch(/holds many accounts/);
    // The next export continues from the adopted checkpoint: it does not fetch the history again.
    emus.acme!.resetStats();
    const next = await runCli(['export', '--config', s.config, '--json', '--log-level', 'error'], s.env);
    expect(next.code).toBe(0);
    const out = JSON.parse(next.stdout) as { accounts: Array<{ summary: { range: { from: string } | null } }> };
    expect(Date.parse(out.accounts[0]!.summary.range!.from) / 1000).toBe(TO - D);
    expect(storedIn(await readDataset(s.data), 'acme', FROM, TO - D)).toEqual(storedIn(adopted, 'acme', FROM, TO - D));
  });

  it('schedule runs the nightly job once per account (--run-now), each from its own startDate, and reports each', async () => {
    const s = await setup(['acme', 'globex'], { acme: { startDate: isoDay(FROM) }, globex: { startDate: isoDay(FROM + D) } });
    const p = startCli(['schedule', '--config', s.config, '--cron', '0 0 1 1 *', '--run-now', '--json', '--log-level', 'warn'], s.env);
    await waitFor(() => /"job":"nightly-export","accounts"/.test(p.output()), 60_000, 'the scheduled run over the accounts');
    p.kill('SIGTERM');
    const r = await p.result;
    expect([0, 143]).toContain(r.code);
    const line = r.stdout.split('\n').find((l) => l.includes('"accounts"'))!;
    const out = JSON.parse(line) as { accounts: Array<{ account: string; outcome: string; summary: { range: { from: string } } }>; total: { failed: number } };
    expect(out.accounts.map((a) => [a.account, a.outcome, a.summary.range.from.slice(0, 10)])).toEqual([
      ['acme', 'succeeded', isoDay(FROM)],
      ['globex', 'succeeded', isoDay(FROM + D)],
    ]);
    const rows = await readDataset(s.data);
    expect(storedIn(rows, 'acme')).toEqual(truth('acme'));
    expect(storedIn(rows, 'globex', FROM + D, TO)).toEqual(truth('globex', FROM + D, TO));
  });

  it('--metrics-file: the per-run counters carry an account label, one series per account; a failed account shows', async () => {
    const s = await setup(['acme', 'globex']);
    s.env.GLOBEX_KEY = 'wrong-key';
    const file = join(s.root, 'session_etl.prom');
    const r = await backfill(s, '--metrics-file', file);
    expect(r.code).toBe(1);
    const text = await readFile(file, 'utf8');
    expect(text).toMatch(/session_etl_runs_total\{command="backfill",outcome="succeeded",account="acme"\} 1/);
    expect(text).toMatch(/session_etl_runs_total\{command="backfill",outcome="failed",account="globex"\} 1/);
    expect(text).toMatch(/session_etl_runs_total\{command="backfill",outcome="failed",account="acme"\} 0/);
    const written = Number(/session_etl_sessions_written_total\{account="acme"\} (\d+)/.exec(text)?.[1]);
    expect(written).toBe((await readDataset(s.data)).filter((x) => x.account === 'acme').length);
    expect(text).toMatch(/session_etl_sessions_written_total\{account="globex"\} 0/);
    expect(text).toMatch(/session_etl_last_run_failed 1/);
    expect(text).not.toContain('wrong-key');
  });

  it('--metrics-file with --shard: each shard writes its own file ({shard} in the path) with a shard label; one path for every shard is refused', async () => {
    // With 2 shards globex is in shard 0, acme in shard 1 (FNV-1a, docs/accounts.md).
    expect([shardOf('globex', 2), shardOf('acme', 2)]).toEqual([0, 1]);
    const s = await setup(['acme', 'globex']);
    s.env.GLOBEX_KEY = 'wrong-key';
    const dir = join(s.root, 'textfile');
    await mkdir(dir);
    const file = join(dir, 'session_etl_{shard}.prom');
    expect((await backfill(s, '--shard', '0/2', '--metrics-file', file)).code).toBe(1);
    expect((await backfill(s, '--shard', '1/2', '--metrics-file', file)).code).toBe(0);
    expect((await readdir(dir)).sort()).toEqual(['session_etl_0-of-2.prom', 'session_etl_1-of-2.prom']);
    const shard0 = await readFile(join(dir, 'session_etl_0-of-2.prom'), 'utf8');
    const shard1 = await readFile(join(dir, 'session_etl_1-of-2.prom'), 'utf8');
    // The failure of shard 0 is not erased by the success of shard 1, and the series differ by shard.
    expect(shard0).toMatch(/session_etl_last_run_failed\{shard="0\/2"\} 1/);
    expect(shard1).toMatch(/session_etl_last_run_failed\{shard="1\/2"\} 0/);
    expect(shard1).toMatch(/session_etl_runs_total\{command="backfill",outcome="succeeded",account="acme",shard="1\/2"\} 1/);

    // One path for every shard: refused before anything runs, saying what to write.
    const plain = join(dir, 'session_etl.prom');
    const r = await backfill(s, '--shard', '1/2', '--metrics-file', plain);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/with --shard, each shard needs a file of its own.*\{shard\}/);
    expect(existsSync(plain)).toBe(false);
    // {shard} without --shard is refused too.
    expect((await backfill(s, '--metrics-file', file)).code).toBe(2);
  });

  it('accounts list prints aligned columns: every column starts at the same place on every line', async () => {
    const root = await tempDir();
    const config = join(root, 'config.json');
    await writeFile(config, JSON.stringify({
      dataDir: join(root, 'data'),
      accounts: {
        acme: { apiKeyFile: '/run/secrets/acme', startDate: '2026-01-01' },
        'stark-industries': { apiKeyEnv: 'STARK_KEY' },
        globex: { apiKeyEnv: 'GLOBEX_REPORTING_KEY', reportingUrl: 'https://reporting.example.com/', concurrency: 2 },
      },
    }));
    const r = await runCli(['accounts', 'list', '--config', config, '--shards', '4']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.map((l) => l.split(/\s{2,}/)[0])).toEqual(['ACCOUNT', 'acme', 'globex', 'stark-industries']);
    // Where each cell starts on each line: the same for every line.
    const starts = lines.map((l) => [...l.matchAll(/(?:^|\s{2})(\S)/g)].map((m) => m.index! + m[0].length - 1));
    for (const s of starts) expect(s).toEqual(starts[0]);
    expect(lines[2]).toMatch(new RegExp(`^globex +env GLOBEX_REPORTING_KEY +${shardOf('globex', 4)}/4 +reportingUrl, concurrency$`));
  });

  it('a shard that holds no account says so on stderr and exits 0 (an Indexed Job may have more shards than accounts)', async () => {
    expect(['acme', 'globex'].map((n) => shardOf(n, 5))).not.toContain(1);
    const s = await setup(['acme', 'globex']);
    const r = await backfill(s, '--shard', '1/5');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/--shard 1\/5 holds none of the 2 configured accounts, so there is nothing to do/);
    expect((JSON.parse(r.stdout) as { accounts: unknown[] }).accounts).toEqual([]);
  });

  it('notifications are per account: a failing account posts one naming it (and the data directory), the others none', async () => {
    const posts: Array<Record<string, unknown>> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        posts.push(JSON.parse(body) as Record<string, unknown>);
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const s = await setup(['acme', 'globex']);
      s.env.GLOBEX_KEY = 'wrong-key-for-notify';
      s.env.SESSION_ETL_NOTIFY_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook/tok3n`;
      const r = await backfill(s);
      expect(r.code).toBe(1);
      expect(posts.map((p) => [p.event, p.account, p.dataDir, p.outcome])).toEqual([['run_failed', 'globex', s.data, 'failed']]);
      expect(String(posts[0]!.error)).toMatch(/HTTP 401/);
      expect(JSON.stringify(posts)).not.toContain('wrong-key-for-notify');
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('sessions --account reads that account only; without it, every account', async () => {
    const s = await setup(['acme', 'globex']);
    expect((await backfill(s)).code).toBe(0);
    const rows = await readDataset(s.data);
    const list = async (...args: string[]) => {
      const r = await runCli(['sessions', '--config', s.config, '--output', 'ndjson', '--page-size', '10000', ...args], s.env);
      expect(r.code).toBe(0);
      return r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id).sort();
    };
    expect(await list('--account', 'globex')).toEqual(rows.filter((x) => x.account === 'globex').map((x) => x.session_id).sort());
    expect(await list()).toEqual(rows.map((x) => x.session_id).sort());
    const bad = await runCli(['sessions', '--config', s.config, '--account', 'nope'], s.env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/configured: acme, globex/);
  });

  it('dashboard --account shows that account alone, with the account in the commands it offers; without it, several accounts are listed', async () => {
    const s = await setup(['acme', 'globex']);
    expect((await backfill(s)).code).toBe(0);
    const dash = await startDashboardCli(['--config', s.config, '--account', 'globex'], s.env);
    try {
      const overview = (await (await dash.fetch('api/overview')).json()) as { totalSessions: number };
      const rows = await readDataset(s.data);
      expect(overview.totalSessions).toBe(rows.filter((x) => x.account === 'globex').length);
      expect(overview.totalSessions).not.toBe(rows.length);
      const coverage = (await (await dash.fetch('api/coverage')).json()) as { gaps: Array<{ command: string }> };
      expect(coverage.gaps.length).toBeGreaterThan(0);
      for (const g of coverage.gaps) expect(g.command).toMatch(/ --config \S+ --account globex$/);
    } finally {
      await dash.stop();
    }
    // No --account: the all-accounts page (test/dashboard/all-accounts.test.ts), each account's routes taking the account.
    const all = await startDashboardCli(['--config', s.config], s.env);
    try {
      const list = (await (await all.fetch('api/accounts')).json()) as { accounts: Array<{ account: string; sessions: number }> };
      expect(list.accounts.map((a) => a.account)).toEqual(['acme', 'globex']);
      const rows = await readDataset(s.data);
      for (const a of list.accounts) expect(a.sessions).toBe(rows.filter((x) => x.account === a.account).length);
      expect((await all.fetch('api/overview')).status).toBe(400);
    } finally {
      await all.stop();
    }
    const unknown = await runCli(['dashboard', '--config', s.config, '--port', '0', '--account', 'nope'], s.env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--account nope is not configured; the accounts are: acme, globex/);
  });
});
