/**
 * The accounts of a many-account run share one DuckDB instance, each account's own file attached
 * to it (src/accounts/shared-store.ts, docs/accounts.md): the file's lock, crash recovery and the
 * file itself must behave as with an instance per account. Real CLI, real emulators, real files.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { openDb, openSharedDuckDB, queryRows } from '../../src/store/duckdb.js';
import { REPO_ROOT, runCli, startCli, waitFor } from '../helpers/cli.js';

const D = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 6 * D;
const TO = FROM + 3 * D;
const iso = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
const NAMES = ['acme', 'globex', 'initech'];

const emus: Record<string, Emulator> = {};
const dirs: string[] = [];

beforeAll(async () => {
  let seed = 31;
  for (const name of NAMES) {
    // Slow answers, so that a run can be killed while accounts hold their files.
    emus[name] = await startEmulator({ seed: seed++, apiKey: `key-of-${name}`, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40, faults: { latencyMs: 150 } });
  }
});
afterAll(async () => {
  for (const e of Object.values(emus)) await e.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function setup() {
  const root = await mkdtemp(join(tmpdir(), 'session-etl-shared-'));
  dirs.push(root);
  const accounts: Record<string, unknown> = {};
  const env: Record<string, string> = {};
  for (const name of NAMES) {
    const v = `${name.toUpperCase()}_KEY`;
    env[v] = emus[name]!.apiKey;
    accounts[name] = { apiKeyEnv: v, reportingUrl: emus[name]!.url };
  }
  const config = join(root, 'config.json');
  await writeFile(config, JSON.stringify({ dataDir: join(root, 'data'), accounts }));
  return { data: join(root, 'data'), config, env };
}

const args = (config: string, ...more: string[]) => ['backfill', '--config', config, '--from', iso(FROM), '--to', iso(TO), '--chunk', '6h', '--json', '--log-level', 'error', '--no-progress', ...more];
const dbOf = (data: string, name: string) => join(data, 'accounts', name, 'sessions.duckdb');

/** The sessions stored in an account's own DuckDB file, opened on its own (as a BI tool or `sessions` does). */
async function storedIds(data: string, name: string): Promise<string[]> {
  const db = await openDb(dbOf(data, name), { readOnly: true });
  try {
    const rows = await queryRows<{ session_id: string }>(db.conn, `SELECT session_id FROM sessions WHERE started_at >= to_timestamp(${FROM}) AND started_at < to_timestamp(${TO})`);
    return rows.map((r) => r.session_id).sort();
  } finally {
    await db.close();
  }
}
const truth = (name: string) => emus[name]!.dataset.sessionsStartedIn(FROM, TO).map((s) => s.id).sort();

describe('one DuckDB instance for the accounts of a run', () => {
  it('an account whose file another process holds fails alone, naming the holder; the others complete', async () => {
    const s = await setup();
    expect((await runCli(args(s.config), s.env)).code).toBe(0);
    // Another process keeps globex's file open read-write (a tool left connected).
    const holder = spawn(
      process.execPath,
      ['--input-type=module', '-e', `const { DuckDBInstance } = await import(${JSON.stringify(join(REPO_ROOT, 'node_modules/@duckdb/node-api/lib/index.js'))});
       const i = await DuckDBInstance.create(${JSON.stringify(dbOf(s.data, 'globex'))}); await i.connect(); console.log('held'); setInterval(() => {}, 1000);`],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise((r) => createInterface({ input: holder.stdout! }).once('line', r));
      const r = await runCli(args(s.config), s.env);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/1 of 3 accounts failed: globex/);
      expect(r.stderr).toMatch(new RegExp(`globex: .*sessions\\.duckdb is open for writing by pid ${holder.pid}`));
      const out = JSON.parse(r.stdout) as { accounts: Array<{ account: string; outcome: string }> };
      expect(out.accounts.map((a) => [a.account, a.outcome])).toEqual([['acme', 'succeeded'], ['globex', 'failed'], ['initech', 'succeeded']]);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('killed (SIGKILL) while accounts hold their files: each file opens again on its own, and the next run completes every account', async () => {
    const s = await setup();
    const run = startCli(args(s.config, '--account-concurrency', '3'), s.env);
    // Killed once every account has committed something and none has finished (12 windows of 150 ms each).
    await waitFor(() => NAMES.every((n) => existsSync(join(s.data, 'accounts', n, 'state.json'))), 20_000, 'every account running');
    await waitFor(() => NAMES.every((n) => existsSync(`${dbOf(s.data, n)}.wal`)), 20_000, 'every account committing');
    run.kill('SIGKILL');
    const killed = await run.result;
    expect(killed.signal).toBe('SIGKILL');
    // Every account's file is a DuckDB file that opens on its own, its WAL replayed (nothing torn).
    for (const n of NAMES) expect((await storedIds(s.data, n)).every((id) => truth(n).includes(id))).toBe(true);
    const again = await runCli(args(s.config), s.env);
    expect(again.code, again.stderr).toBe(0);
    for (const n of NAMES) expect(await storedIds(s.data, n)).toEqual(truth(n));
  });

  it('opened twice at once (two many-account jobs of schedule), the engine is shared and closes with its last user', async () => {
    const root = await mkdtemp(join(tmpdir(), 'session-etl-shared-'));
    dirs.push(root);
    const first = await openSharedDuckDB({ threads: 1 });
    const second = await openSharedDuckDB({ threads: 1 });
    const a = await openDb(join(root, 'a.duckdb'));
    await a.conn.run('CREATE TABLE t AS SELECT 42 AS n');
    await first.close();
    // The second user's engine still holds a's file; a second file attaches beside it.
    expect(a.shared).toBe(true);
    const b = await openDb(join(root, 'b.duckdb'));
    expect(b.shared).toBe(true);
    await b.conn.run('CREATE TABLE t AS SELECT 7 AS n');
    expect((await queryRows<{ n: number }>(a.conn, 'SELECT n FROM t'))[0]!.n).toBe(42);
    await a.close();
    await b.close();
    await second.close();
    // Closed with its last user: a writer opened now has an instance of its own.
    const c = await openDb(join(root, 'c.duckdb'));
    expect(c.shared).toBe(false);
    await c.close();
    // Each file holds its own table, readable on its own.
    for (const [f, n] of [['a.duckdb', 42], ['b.duckdb', 7]] as const) {
      const db = await openDb(join(root, f), { readOnly: true });
      expect((await queryRows<{ n: number }>(db.conn, 'SELECT n FROM t'))[0]!.n).toBe(n);
      await db.close();
    }
  });
});
