/**
 * A many-account data directory written by the build before issue 29 (per-account stores under
 * accounts/NAME/, partitions under account=NAME/; test/fixtures/legacy-accounts/make.mjs made it)
 * moves into the one store and the date-partitioned dataset: by `accounts migrate`, and by the
 * first run. Nothing lost, nothing counted twice, nothing fetched again.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { afterAll, describe, expect, it } from 'vitest';
import { openDb, queryRows } from '../../src/store/duckdb.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { REPO_ROOT, runCli } from '../helpers/cli.js';
import { D } from '../helpers/time.js';

// As make.mjs wrote them.
const FROM = Date.parse('2026-01-05T00:00:00Z') / 1000;
const NOW = Date.parse('2026-01-20T00:00:00Z') / 1000;
const ACCOUNTS = [
  { name: 'acme', apiKey: 'legacy-key-acme', seed: 101, sessionsPerDay: 30 },
  { name: 'globex', apiKey: 'legacy-key-globex', seed: 102, sessionsPerDay: 20 },
  { name: 'initech', apiKey: 'legacy-key-initech', seed: 103, sessionsPerDay: 25 },
];
const ENV = { ACME_KEY: 'legacy-key-acme', GLOBEX_KEY: 'legacy-key-globex', INITECH_KEY: 'legacy-key-initech' };
const FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'legacy-accounts', 'legacy-accounts.tar.gz');

const fx = useEmulator({ seed: 100, from: FROM - D, to: NOW, now: NOW, accounts: ACCOUNTS }, { prefix: 'session-etl-migrate-' });
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** The fixture unpacked, and a configuration naming its accounts (format: the directory's own). */
async function legacyDir(format: 'both' | 'parquet'): Promise<{ data: string; config: string }> {
  const root = await mkdtemp(join(tmpdir(), 'session-etl-migrate-'));
  dirs.push(root);
  execFileSync('tar', ['-xzf', FIXTURE, '-C', root, format]);
  const data = join(root, format);
  const config = join(root, 'config.json');
  const accounts = Object.fromEntries(ACCOUNTS.map((a) => [a.name, { apiKeyEnv: `${a.name.toUpperCase()}_KEY` }]));
  await writeFile(config, JSON.stringify({ dataDir: data, reportingUrl: fx.emu.url, accounts }));
  return { data, config };
}

type Row = { account: string; id: string; extracted: number; notes: string | null };
const key = (r: Row) => `${r.account}/${r.id}/${r.extracted}/${r.notes}`;

async function readFiles(files: Array<{ path: string; account?: string }>): Promise<Row[]> {
  const out: Row[] = [];
  for (const f of files) {
    const buf = await asyncBufferFromFile(f.path);
    const rows = (await parquetReadObjects({ file: buf, metadata: await parquetMetadataAsync(buf), compressors })) as Array<Record<string, unknown>>;
    for (const r of rows) {
      out.push({
        account: f.account ?? String(r.account),
        id: String(r.session_id),
        extracted: (r.extracted_at as Date).getTime(),
        notes: (r.external_notes as string | null) ?? null,
      });
    }
  }
  return out;
}

/** The old layout's dataset: account from the path. */
async function readLegacy(data: string): Promise<Row[]> {
  const root = join(data, 'parquet', 'sessions');
  const files: Array<{ path: string; account: string }> = [];
  for (const a of await readdir(root)) for (const d of await readdir(join(root, a))) files.push({ path: join(root, a, d, 'part-0.parquet'), account: a.slice('account='.length) });
  return readFiles(files);
}

/** The new layout's dataset: date directories only, the account in the rows. */
async function readNew(data: string): Promise<Row[]> {
  const root = join(data, 'parquet', 'sessions');
  const files: Array<{ path: string }> = [];
  for (const d of await readdir(root)) {
    expect(d).toMatch(/^date=\d{4}-\d\d-\d\d$/);
    for (const f of await readdir(join(root, d))) files.push({ path: join(root, d, f) });
  }
  return readFiles(files);
}

/** Each old account store's run history (two runs each in the fixture). */
async function legacyRuns(data: string, format: 'both' | 'parquet'): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const a of ACCOUNTS) {
    const db = await openDb(join(data, 'accounts', a.name, format === 'parquet' ? 'state.duckdb' : 'sessions.duckdb'), { readOnly: true, allowedDirectories: [data] });
    try {
      out[a.name] = (await queryRows<{ run_id: string }>(db.conn, 'SELECT run_id FROM _runs ORDER BY started_at')).map((r) => r.run_id);
    } finally {
      db.close();
    }
  }
  return out;
}

describe.each(['both', 'parquet'] as const)('a many-account directory of the layout before schema 3 (format %s)', (format) => {
  it('`accounts migrate` moves every account into the one store and the date-partitioned dataset: every row and run kept, once', async () => {
    const { data, config } = await legacyDir(format);
    const before = await readLegacy(data);
    const runs = await legacyRuns(data, format);
    expect(before.length).toBeGreaterThan(200);
    const r = await runCli(['accounts', 'migrate', '--config', config, '--json'], ENV);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const moved = (JSON.parse(r.stdout) as { moved: Array<{ account: string; sessions: number }> }).moved;
    expect(moved.map((m) => m.account)).toEqual(['acme', 'globex', 'initech']);
    for (const m of moved) expect(m.sessions).toBe(before.filter((x) => x.account === m.account).length);
    // The old layout is gone: its stores and its account= directories.
    expect(existsSync(join(data, 'accounts'))).toBe(false);
    expect((await readdir(join(data, 'parquet', 'sessions'))).filter((d) => d.startsWith('account='))).toEqual([]);
    const after = await readNew(data);
    expect(after.map(key).sort()).toEqual(before.map(key).sort());
    expect(new Set(after.map((x) => `${x.account}/${x.id}`)).size).toBe(after.length);
    // Each account's checkpoint, coverage and runs came with it.
    const st = await runCli(['status', '--config', config, '--json', '--runs', '10'], ENV);
    expect(st.code).toBe(0);
    const status = JSON.parse(st.stdout) as { accounts: Array<{ account: string; status: { checkpoint: string; coverage: unknown[]; lastRuns: Array<{ run_id: string }> } }> };
    for (const a of status.accounts) {
      expect(a.status.checkpoint).toBe('2026-01-08T00:00:00Z');
      expect(a.status.coverage).toEqual([{ from: '2026-01-05T00:00:00Z', to: '2026-01-08T00:00:00Z' }]);
      expect(a.status.lastRuns.map((x) => x.run_id).sort()).toEqual([...runs[a.account]!].sort());
    }
    // Nothing left to move: a second migrate moves nothing.
    const again = await runCli(['accounts', 'migrate', '--config', config, '--json'], ENV);
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as { moved: unknown[] }).moved).toEqual([]);
  });

  it('the first run migrates, then works on the moved data: a day fetched again is all re-read unchanged, nothing new, nothing twice', async () => {
    const { data, config } = await legacyDir(format);
    const before = await readLegacy(data);
    const r = await runCli(['backfill', '--config', config, '--from', '2026-01-07', '--to', '2026-01-08', '--json', '--log-level', 'error'], ENV);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { accounts: Array<{ account: string; summary: { sessions: { written: number; new: number; updated: number; unchanged: number } } }> };
    for (const a of out.accounts) {
      const day = fx.emu.account(a.account).dataset.sessionsStartedIn(FROM + 2 * D, FROM + 3 * D).length;
      expect(a.summary.sessions.new).toBe(0);
      // The moved rows are the same sessions as the server's: read again, not changed.
      expect(a.summary.sessions.updated).toBe(0);
      expect(a.summary.sessions.unchanged).toBeGreaterThanOrEqual(day);
    }
    expect(existsSync(join(data, 'accounts'))).toBe(false);
    const after = await readNew(data);
    expect(new Set(after.map((x) => `${x.account}/${x.id}`))).toEqual(new Set(before.map((x) => `${x.account}/${x.id}`)));
    expect(new Set(after.map((x) => `${x.account}/${x.id}`)).size).toBe(after.length);
  });
});
