/**
 * The Parquet rewrite of format both (src/store/parquet-rewriter.ts) on a real DuckDB file and the
 * data directory's dataset, read back with hyparquet: each pending day is written whole from the
 * sessions table, in start order, and its pending mark cleared; a day that cannot be put in place
 * fails naming the day, keeps its mark for the next flush, and leaves no temporary file.
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDataset } from '../../src/store/dataset/open-dataset.js';
import { openDb, queryRows, type Db } from '../../src/store/duckdb.js';
import { layoutOf, NULL_PARTITION, type StoreLayout } from '../../src/store/layout.js';
import { ParquetRewriter } from '../../src/store/parquet-rewriter.js';
import { ensureSchema } from '../../src/store/schema.js';
import { storeShape } from '../../src/store/shape.js';
import { readParquetDataset } from '../helpers/read-store.js';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f();
  cleanup = [];
});

/** A new format-both store's DuckDB file and dataset, and a rewriter over them. */
async function setUp(): Promise<{ dir: string; layout: StoreLayout; db: Db; rewriter: ParquetRewriter }> {
  const dir = await mkdtemp(join(tmpdir(), 'session-etl-parquet-rewriter-'));
  const layout = layoutOf(dir, 'both');
  await mkdir(layout.tmpDir, { recursive: true });
  const db = await openDb(layout.dbPath, { allowedDirectories: [dir] });
  await ensureSchema(db.conn, { format: 'both', accounts: 'single', newFile: true });
  const rewriter = new ParquetRewriter(db, layout, storeShape('single'), await openDataset({ kind: 'local', root: layout.parquetDir }, layout));
  cleanup.push(async () => {
    rewriter.closeConnections();
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { dir, layout, db, rewriter };
}

async function insert(db: Db, rows: Array<[id: string, started: string | null, notes: string]>): Promise<void> {
  for (const [id, started, notes] of rows) {
    await db.conn.run(`INSERT INTO sessions (session_id, started_at, external_notes, extracted_at) VALUES ($1, $2::TIMESTAMPTZ, $3, TIMESTAMPTZ '2026-01-03 00:00:00+00')`, [id, started, notes]);
  }
}
async function mark(db: Db, partitions: string[], gen = 1): Promise<void> {
  for (const p of partitions) await db.conn.run('INSERT INTO _parquet_pending VALUES ($1, $2)', [p, gen]);
}
const pending = async (db: Db) => (await queryRows<{ p: string }>(db.conn, 'SELECT DISTINCT partition AS p FROM _parquet_pending ORDER BY 1')).map((r) => r.p);
/** Each day file of the dataset: its partition directory and its rows' ids and notes, in file order. */
async function files(dir: string) {
  return (await readParquetDataset(dir)).map((f) => ({ partition: f.partition, file: f.file.slice(f.file.lastIndexOf('/') + 1), rows: f.rows.map((r) => [r.session_id, r.external_notes]) }));
}

describe('ParquetRewriter', () => {
  it('writes each pending day whole from the sessions table, rows in start order, and clears the marks', async () => {
    const { dir, layout, db, rewriter } = await setUp();
    await insert(db, [
      ['b', '2026-01-01 12:00:00+00', 'noon'],
      ['c', '2026-01-02 08:00:00+00', 'next day'],
      ['a', '2026-01-01 09:00:00+00', 'morning'],
      ['z', null, 'no start'],
      ['d', '2026-01-05 09:00:00+00', 'not pending'],
    ]);
    await mark(db, ['2026-01-01', '2026-01-02', NULL_PARTITION]);
    expect(await rewriter.rewritePending(['2026-01-01', '2026-01-02', NULL_PARTITION])).toEqual(['2026-01-01', '2026-01-02', NULL_PARTITION]);
    expect(await files(dir)).toEqual([
      { partition: 'date=2026-01-01', file: 'part-0.parquet', rows: [['a', 'morning'], ['b', 'noon']] },
      { partition: 'date=2026-01-02', file: 'part-0.parquet', rows: [['c', 'next day']] },
      { partition: `date=${NULL_PARTITION}`, file: 'part-0.parquet', rows: [['z', 'no start']] },
    ]);
    expect(await pending(db)).toEqual([]);
    expect(await readdir(layout.tmpDir)).toEqual([]);
  });

  it('a day rewritten again holds the table as it is now; a day left without sessions loses its file and directory', async () => {
    const { dir, db, rewriter } = await setUp();
    await insert(db, [['a', '2026-01-01 09:00:00+00', 'v1'], ['b', '2026-01-01 10:00:00+00', 'v1'], ['c', '2026-01-02 08:00:00+00', 'v1']]);
    await mark(db, ['2026-01-01', '2026-01-02']);
    await rewriter.rewritePending(['2026-01-01', '2026-01-02']);
    await db.conn.run(`UPDATE sessions SET external_notes = 'v2' WHERE session_id = 'a'`);
    await db.conn.run(`DELETE FROM sessions WHERE session_id IN ('b', 'c')`);
    await mark(db, ['2026-01-01', '2026-01-02'], 2);
    await rewriter.rewritePending(['2026-01-01', '2026-01-02']);
    expect(await files(dir)).toEqual([{ partition: 'date=2026-01-01', file: 'part-0.parquet', rows: [['a', 'v2']] }]);
    expect(existsSync(join(dir, 'parquet', 'sessions', 'date=2026-01-02'))).toBe(false);
    expect(await pending(db)).toEqual([]);
  });

  it('a day that cannot be put in place fails naming it, keeps its mark for the next flush and leaves no temporary file; the other day is written', async () => {
    const { dir, layout, db, rewriter } = await setUp();
    await insert(db, [['a', '2026-01-01 09:00:00+00', 'x'], ['c', '2026-01-02 08:00:00+00', 'y']]);
    await mark(db, ['2026-01-01', '2026-01-02']);
    // A file where the day's directory belongs.
    await mkdir(layout.parquetDir, { recursive: true });
    await writeFile(join(layout.parquetDir, 'date=2026-01-02'), 'in the way');
    await expect(rewriter.rewritePending(['2026-01-01', '2026-01-02'])).rejects.toThrow(/rewriting Parquet partition date=2026-01-02/);
    expect(await pending(db)).toEqual(['2026-01-02']);
    expect(await readdir(layout.tmpDir)).toEqual([]);
    await rm(join(layout.parquetDir, 'date=2026-01-02'));
    expect(await files(dir)).toEqual([{ partition: 'date=2026-01-01', file: 'part-0.parquet', rows: [['a', 'x']] }]);
    // The next rewrite (the next flush) writes it.
    await rewriter.rewritePending(await pending(db));
    expect(await files(dir)).toEqual([
      { partition: 'date=2026-01-01', file: 'part-0.parquet', rows: [['a', 'x']] },
      { partition: 'date=2026-01-02', file: 'part-0.parquet', rows: [['c', 'y']] },
    ]);
    expect(await pending(db)).toEqual([]);
  });
});
