/**
 * A table store (formats duckdb and both) written by a version before 0.5 kept the rows of its slow
 * path and of a verify's repair in `_pending_rows` until a merge. Today every committed window is a
 * record file; such rows become record files when the store is next opened for writing, in one
 * transaction, and the merge treats them as it treated them then: newest extracted_at wins, nothing
 * lost, nothing twice. The old rows are written here as the old code wrote them, straight into the table.
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/store/session-store.js';
import type { OutputFormat } from '../../src/store/layout.js';
import { captureLogger } from '../helpers/capture.js';
import { parquetRowsComparable, readParquetDataset } from '../helpers/read-store.js';

const D = 86_400;
const DAY1 = 1767225600; // 2026-01-01T00:00:00Z
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const record = (id: string, started: number, notes: string) => ({ id, companyId: 'c1', started, agent: { id: 'a1', name: 'Ann', email: null }, externalFields: { notes } });
const ndjson = (records: object[], extractedAt: number) => ({ bytes: Buffer.from(records.map((r) => JSON.stringify(r)).join('\n')), count: records.length, extractedAt });

async function rowsOf(dbPath: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const inst = await DuckDBInstance.create(dbPath, { access_mode: 'READ_ONLY' });
  const c = await inst.connect();
  try {
    return (await c.runAndReadAll(sql)).getRowObjectsJS();
  } finally {
    c.closeSync();
    inst.closeSync();
  }
}

describe.each<[OutputFormat, 'single' | 'many']>([
  ['duckdb', 'single'],
  ['both', 'single'],
  ['duckdb', 'many'],
  ['both', 'many'],
])('rows an earlier version left in _pending_rows, format %s, %s account(s)', (format, accounts) => {
  it('are merged as then: the newest version wins, each session once, _pending_rows left empty, a crashed adoption\'s file ignored', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-old-pending-'));
    dirs.push(dir);
    const account = accounts === 'many' ? 'acme' : '';
    const open = () => SessionStore.open({ dataDir: dir, format, accounts, logger: captureLogger() });
    let store = await open();
    await store.commitWindow({ account, window: { start: DAY1, end: DAY1 + D }, ndjson: ndjson([record('s1', DAY1 + 10, 'v1'), record('s2', DAY1 + 20, 'x')], 1000), rejected: [], runId: 'r1' });
    await store.flush();
    await store.close();

    // What the old slow path's commit inserted (STAGING_SELECT), with the coverage of its window.
    const inst = await DuckDBInstance.create(join(dir, 'sessions.duckdb'));
    const c = await inst.connect();
    const acct = accounts === 'many' ? `'${account}', ` : '';
    await c.run(
      `INSERT INTO _pending_rows (${accounts === 'many' ? 'account, ' : ''}session_id, company_id, started_at, agent_id, agent_name, external_notes, extracted_at, partition) VALUES
         (${acct}'s1', 'c1', to_timestamp(${DAY1 + 10}), 'a1', 'Ann', 'v2 "quoted" é 😀\n', to_timestamp(2000.123), '2026-01-01'),
         (${acct}'s2', 'c1', to_timestamp(${DAY1 + 20}), 'a1', 'Ann', 'older', to_timestamp(500), '2026-01-01'),
         (${acct}'s3', NULL, to_timestamp(${DAY1 + D + 5}), NULL, NULL, NULL, to_timestamp(2000.123), '2026-01-02'),
         (${acct}'s4', 'c1', NULL, NULL, NULL, NULL, to_timestamp(2500), '${'__HIVE_DEFAULT_PARTITION__'}')`,
    );
    await c.run(`INSERT INTO _coverage (start_s, end_s, run_id, committed_at, account) VALUES (${DAY1}, ${DAY1 + 2 * D}, 'old', now(), '${account}')`);
    c.closeSync();
    inst.closeSync();
    // What a crash in the middle of an earlier adoption leaves: a record file written, never listed.
    await mkdir(join(dir, 'pending'), { recursive: true });
    await writeFile(join(dir, 'pending', `rows-${String(DAY1).padStart(12, '0')}-1-1.ndjson`), JSON.stringify(record('s1', DAY1 + 10, 'v2')));

    store = await open();
    await store.beginRunCounts();
    const flushed = await store.flush();
    await store.close();
    expect(flushed.counts.get(account)).toEqual({ inserted: 2, updated: 1, unchanged: 0 });

    const dbPath = join(dir, 'sessions.duckdb');
    const rows = await rowsOf(
      dbPath,
      `SELECT session_id AS id, external_notes AS notes, agent_id, epoch(extracted_at) AS e, epoch(started_at)::INTEGER AS s FROM sessions ORDER BY 1`,
    );
    expect(rows).toEqual([
      { id: 's1', notes: 'v2 "quoted" é 😀\n', agent_id: 'a1', e: 2000.123, s: DAY1 + 10 },
      { id: 's2', notes: 'x', agent_id: 'a1', e: 1000, s: DAY1 + 20 },
      { id: 's3', notes: null, agent_id: null, e: 2000.123, s: DAY1 + D + 5 },
      { id: 's4', notes: null, agent_id: null, e: 2500, s: null },
    ]);
    expect(await rowsOf(dbPath, 'SELECT count(*)::INTEGER AS n FROM _pending_rows')).toEqual([{ n: 0 }]);
    expect(await rowsOf(dbPath, 'SELECT count(*)::INTEGER AS n FROM _pending_files')).toEqual([{ n: 0 }]);
    expect(await readdir(dir)).not.toContain('pending');
    if (format === 'both') {
      const parquet = parquetRowsComparable(await readParquetDataset(dir));
      expect(parquet.map((r) => [r.session_id, r.external_notes]).sort()).toEqual([['s1', 'v2 "quoted" é 😀\n'], ['s2', 'x'], ['s3', null], ['s4', null]]);
    }

    // Opened again: nothing is adopted twice.
    store = await open();
    await store.beginRunCounts();
    expect((await store.flush()).counts.get(account) ?? { inserted: 0, updated: 0, unchanged: 0 }).toEqual({ inserted: 0, updated: 0, unchanged: 0 });
    await store.close();
    expect(await rowsOf(dbPath, 'SELECT count(*)::INTEGER AS n FROM sessions')).toEqual([{ n: 4 }]);
  });
});
