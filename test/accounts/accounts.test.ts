/**
 * Many accounts (issue 18, docs/accounts.md), through the real CLI: one emulator per account (each
 * its own key and seed, reached through the account's reportingUrl override), real DuckDB files,
 * and the whole dataset read back with DuckDB and with hyparquet.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { fnv1a32, shardOf } from '../../src/accounts/select.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { openDb, queryRows } from '../../src/store/duckdb.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { startDashboardCli } from '../dashboard/fixture.js';

const D = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 6 * D;
const TO = FROM + 3 * D;
const iso = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);

const emus: Record<string, Emulator> = {};
const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-accounts-'));
  dirs.push(d);
  return d;
}

beforeAll(async () => {
  let seed = 11;
  for (const name of ['acme', 'globex', 'initech']) {
    emus[name] = await startEmulator({ seed: seed++, apiKey: `key-of-${name}`, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 });
  }
});
afterAll(async () => {
  for (const e of Object.values(emus)) await e.close();
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

/** Every Parquet file of the dataset, read with hyparquet; account and date from the path (Hive partitioning). */
type DatasetRow = { account: string; date: string; session_id: string; started: number };
async function readDataset(data: string): Promise<DatasetRow[]> {
  const root = join(data, 'parquet', 'sessions');
  const out: DatasetRow[] = [];
  for (const a of (await readdir(root)).sort()) {
    for (const d of await readdir(join(root, a))) {
      const file = join(root, a, d, 'part-0.parquet');
      const buf = await asyncBufferFromFile(file);
      const rows = (await parquetReadObjects({ file: buf, metadata: await parquetMetadataAsync(buf), compressors })) as Array<Record<string, unknown>>;
      for (const r of rows) {
        out.push({ account: a.replace(/^account=/, ''), date: d.replace(/^date=/, ''), session_id: String(r.session_id), started: (r.started_at as Date).getTime() / 1000 });
      }
    }
  }
  return out;
}

const backfill = (s: { config: string; env: Record<string, string> }, ...args: string[]) =>
  runCli(['backfill', '--config', s.config, '--from', iso(FROM), '--to', iso(TO), '--json', '--log-level', 'error', ...args], s.env);

describe('many accounts', () => {
  it('backfills every account into its own state and one dataset that DuckDB and hyparquet read as one table with an account column', async () => {
    const s = await setup();
    const r = await backfill(s);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { accounts: Array<{ account: string; outcome: string; summary: { sessions: { written: number } } }>; total: Record<string, unknown> };
    expect(out.accounts.map((a) => [a.account, a.outcome])).toEqual([['acme', 'succeeded'], ['globex', 'succeeded'], ['initech', 'succeeded']]);
    expect(out.total).toMatchObject({ accounts: 3, succeeded: 3, failed: 0 });
    for (const name of ['acme', 'globex', 'initech']) {
      expect(existsSync(join(s.data, 'accounts', name, 'sessions.duckdb'))).toBe(true);
      expect(existsSync(join(s.data, 'accounts', name, 'state.json'))).toBe(true);
    }
    // No single-account files at the top.
    expect(readdirSync(s.data).sort()).toEqual(['accounts', 'all-accounts.duckdb', 'parquet']);

    // hyparquet: every account's sessions, and only its own.
    const rows = await readDataset(s.data);
    for (const name of ['acme', 'globex', 'initech']) {
      expect(storedIn(rows, name)).toEqual(truth(name));
      expect(new Set(rows.filter((x) => x.account === name).map((x) => x.session_id)).size).toBe(rows.filter((x) => x.account === name).length);
    }
    // DuckDB: the all-accounts view, and read_parquet over the dataset with hive partitioning.
    const db = await openDb(join(s.data, 'all-accounts.duckdb'), { readOnly: true });
    try {
      const viaView = await queryRows<{ account: string; n: number }>(db.conn, 'SELECT account, count(*)::INT AS n FROM sessions GROUP BY 1 ORDER BY 1');
      expect(viaView).toEqual(['acme', 'globex', 'initech'].map((a) => ({ account: a, n: rows.filter((x) => x.account === a).length })));
      const glob = join(s.data, 'parquet', 'sessions', '*', '*', '*.parquet');
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
    expect(readdirSync(join(s.data, 'accounts')).sort()).toEqual(['globex', 'initech']);

    const s2 = await setup();
    const bad = await backfill(s2, '--account', 'acme', '--account', 'umbrella');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/no account called "umbrella".*configured: acme, globex, initech/);
    expect(existsSync(s2.data)).toBe(false);
  });

  it('shards cut the accounts by FNV-1a 32-bit of the name modulo N: their union is every account, with no overlap, each shard touching only its own', async () => {
    // Six accounts on one emulator (the same key): the cut, not the data, is under test here.
    const root = await tempDir();
    const names = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark-industries'];
    const config = join(root, 'config.json');
    const data = join(root, 'data');
    await writeFile(config, JSON.stringify({ dataDir: data, accounts: Object.fromEntries(names.map((n) => [n, { apiKeyEnv: 'K', reportingUrl: emus.acme!.url }])) }));
    const env = { K: emus.acme!.apiKey };
    // The documented hash: FNV-1a 32-bit over the UTF-8 bytes (published test vectors).
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
    const N = 3;
    const shardArgs = (i: number) => ['backfill', '--config', config, '--from', iso(FROM), '--to', iso(FROM + D), '--shard', `${i}/${N}`, '--json', '--log-level', 'error'];
    // Shard 0 alone: it creates (opens, locks) its own accounts' directories and partitions, no other.
    const first = await runCli(shardArgs(0), env);
    expect(first.code).toBe(0);
    const own = names.filter((n) => shardOf(n, N) === 0).sort();
    expect(own.length).toBeGreaterThan(0);
    expect(readdirSync(join(data, 'accounts')).sort()).toEqual(own);
    expect(readdirSync(join(data, 'parquet', 'sessions')).sort()).toEqual(own.map((n) => `account=${n}`));
    // Then every shard at the same time on the same data directory (shard 0 again: nothing new to do there).
    const runs = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        runCli(['backfill', '--config', config, '--from', iso(FROM), '--to', iso(FROM + D), '--shard', `${i}/${N}`, '--json', '--log-level', 'error'], env),
      ),
    );
    const seen: string[][] = runs.map((r) => {
      expect(r.code).toBe(0);
      return (JSON.parse(r.stdout) as { accounts: Array<{ account: string }> }).accounts.map((a) => a.account);
    });
    seen.forEach((shard, i) => expect(shard).toEqual(names.filter((n) => shardOf(n, N) === i).sort()));
    expect(seen.flat().sort()).toEqual([...names].sort());
    expect(new Set(seen.flat()).size).toBe(names.length);
    expect(readdirSync(join(data, 'accounts')).sort()).toEqual([...names].sort());

    for (const shard of ['3/3', '1/0', 'x', '-1/2', '1/2/3']) {
      const r = await runCli(['backfill', '--config', config, '--from', iso(FROM), '--to', iso(FROM + D), '--shard', shard], env);
      expect({ shard, code: r.code }).toEqual({ shard, code: 2 });
      expect(r.stderr).toMatch(/--shard/);
    }
  });

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
  });

  it('an account added later is backfilled from its startDate on the next export', async () => {
    const s = await setup(['acme']);
    const first = await runCli(['export', '--config', s.config, '--since', iso(FROM), '--json', '--log-level', 'error'], s.env);
    expect(first.code).toBe(0);
    const start = FROM + 2 * D;
    await s.write({ ...s.accounts, globex: { apiKeyEnv: 'GLOBEX_KEY', reportingUrl: emus.globex!.url, startDate: iso(start) } });
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

  it('adopts a single-account data directory under an account name without fetching again', async () => {
    const s = await setup(['acme']);
    const single = await runCli(['backfill', '--from', iso(FROM), '--to', iso(TO), '--log-level', 'error'], {
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
    expect(readdirSync(s.data).sort()).toEqual(['accounts', 'parquet']);
    const adopted = await readDataset(s.data);
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
    const s = await setup(['acme', 'globex'], { acme: { startDate: iso(FROM) }, globex: { startDate: iso(FROM + D) } });
    const p = startCli(['schedule', '--config', s.config, '--cron', '0 0 1 1 *', '--run-now', '--json', '--log-level', 'warn'], s.env);
    await waitFor(() => /"job":"nightly-export","accounts"/.test(p.output()), 60_000, 'the scheduled run over the accounts');
    p.kill('SIGTERM');
    const r = await p.result;
    expect([0, 143]).toContain(r.code);
    const line = r.stdout.split('\n').find((l) => l.includes('"accounts"'))!;
    const out = JSON.parse(line) as { accounts: Array<{ account: string; outcome: string; summary: { range: { from: string } } }>; total: { failed: number } };
    expect(out.accounts.map((a) => [a.account, a.outcome, a.summary.range.from.slice(0, 10)])).toEqual([
      ['acme', 'succeeded', iso(FROM)],
      ['globex', 'succeeded', iso(FROM + D)],
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

  it('notifications are per account: a failing account posts one naming its directory, the others none', async () => {
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
      expect(posts.map((p) => [p.event, p.dataDir, p.outcome])).toEqual([['run_failed', join(s.data, 'accounts', 'globex'), 'failed']]);
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

  it('dashboard --account shows that account alone, with the account in the commands it offers; several accounts need --account', async () => {
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
    const none = await runCli(['dashboard', '--config', s.config, '--port', '0'], s.env);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/2 accounts \(acme, globex\): give --account NAME/);
    const unknown = await runCli(['dashboard', '--config', s.config, '--port', '0', '--account', 'nope'], s.env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--account nope is not configured; the accounts are: acme, globex/);
  });
});
