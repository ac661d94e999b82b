/**
 * The load stage's merge: committed windows reach the sessions table and the Parquet dataset while
 * later windows are still being fetched; one row per session whatever the order versions arrive
 * in; stores written by an older session-etl are migrated.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { runBackfill, type PipelineOptions } from '../../src/pipeline/run.js';
import { completeDays, SCHEMA_VERSION } from '../../src/store/session-store.js';
import { silentLogger } from '../../src/util/logger.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { expectedRow, readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const DAYS = 6;
const TO = FROM + DAYS * D;
const NOW = TO + 3 * 3600;

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-merge-'));
  dirs.push(d);
  return d;
}

const fx = useEmulator({ seed: 11, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 150 }, { prefix: 'session-etl-merge-' });
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function base(dataDir: string, extra: Partial<PipelineOptions> = {}): PipelineOptions {
  return { reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', now: () => NOW * 1000, sleep: async () => {}, ...extra };
}

async function sql<T>(path: string, query: string, readOnly = true): Promise<T[]> {
  const inst = await DuckDBInstance.create(path, readOnly ? { access_mode: 'READ_ONLY' } : {});
  const c = await inst.connect();
  try {
    return (await c.runAndReadAll(query)).getRowObjectsJS() as T[];
  } finally {
    c.closeSync();
    inst.closeSync();
  }
}

describe('completeDays', () => {
  it('keeps only the partitions whose whole UTC day is covered', () => {
    const cover = [{ start: FROM, end: FROM + 2 * D }, { start: FROM + 3 * D + 3600, end: FROM + 5 * D }];
    expect(completeDays(['2026-01-01', '2026-01-02', '2026-01-03', '2026-01-04', '2026-01-05', '__HIVE_DEFAULT_PARTITION__'], cover)).toEqual([
      '2026-01-01',
      '2026-01-02',
      '2026-01-05',
    ]);
    expect(completeDays(['2026-01-01'], [])).toEqual([]);
  });
});

describe('merging while fetching', () => {
  it('finished days are in the Parquet dataset and the table before the last window is fetched', async () => {
    const dataDir = await tempDir();
    const firstDay = join(dataDir, 'parquet', 'sessions', 'date=2026-01-01', 'part-0.parquet');
    let sawEarly = false;
    let seenRowsEarly = 0;
    let requests = 0;
    // The step the test waits for: the store says it wrote finished days while fetching (a debug line).
    let firstDayWritten!: () => void;
    const written = new Promise<void>((resolve) => (firstDayWritten = resolve));
    const logger = {
      ...silentLogger,
      debug: (obj: object, msg?: string) => {
        const partitions = (obj as { partitions?: string[] }).partitions ?? [];
        if (msg === 'finished days written to Parquet while fetching' && partitions.includes('2026-01-01')) firstDayWritten();
      },
    };
    const fetchHolding: typeof fetch = async (input, init) => {
      requests++;
      if (requests === DAYS) {
        // The last window: held until the first day is written, while this request is in flight.
        await written;
        sawEarly = existsSync(firstDay);
        if (sawEarly) seenRowsEarly = (await readParquetDataset(dataDir)).flatMap((p) => p.rows).length;
      }
      return fetch(input, init);
    };
    const s = await runBackfill({ ...base(dataDir, { concurrency: 1, fetch: fetchHolding, chunkSeconds: D, logger }), from: FROM, to: TO });
    expect(s.outcome).toBe('succeeded');
    // Merged in several slices, boundary sessions returned by two windows included: each counted once, as new.
    expect(s.sessions).toMatchObject({ new: fx.emu.dataset.sessionsStartedIn(FROM, TO).length, updated: 0 });
    expect(requests).toBe(DAYS);
    expect(sawEarly).toBe(true);
    expect(seenRowsEarly).toBeGreaterThan(0);
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, TO);
    expect(seenRowsEarly).toBeLessThan(truth.length);
    // In the end: every session once, in both outputs.
    const table = await readDuckDbSessions(dataDir);
    expect(table.length).toBe(truth.length);
    expect(new Set(table.map((r) => r.session_id)).size).toBe(truth.length);
    expect((await readParquetDataset(dataDir)).flatMap((p) => p.rows).length).toBe(truth.length);
  });

  it('a stored version newer than the one fetched stays; the fetched one is dropped, not duplicated', async () => {
    const dataDir = await tempDir();
    await runBackfill({ ...base(dataDir), from: FROM, to: TO });
    const db = join(dataDir, 'sessions.duckdb');
    const [one] = await sql<{ session_id: string }>(db, 'SELECT session_id FROM sessions ORDER BY session_id LIMIT 1');
    // As if a later fetch had already stored a newer version of this session (and marked its day
    // for a Parquet rewrite, as a merge does).
    await sql(
      db,
      `UPDATE sessions SET extracted_at = TIMESTAMPTZ '2100-01-01 00:00:00+00', external_notes = 'newer' WHERE session_id = '${one!.session_id}';
       INSERT INTO _parquet_pending SELECT strftime(started_at, '%Y-%m-%d'), 1 FROM sessions WHERE session_id = '${one!.session_id}'`,
      false,
    );
    const s = await runBackfill({ ...base(dataDir), from: FROM, to: TO });
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, TO);
    const rows = await readDuckDbSessions(dataDir);
    expect(rows.length).toBe(truth.length);
    const kept = rows.filter((r) => r.session_id === one!.session_id);
    expect(kept).toHaveLength(1);
    expect(kept[0]!.external_notes).toBe('newer');
    expect(s.sessions.new).toBe(0);
    // Every other session was replaced once, including those that two windows return (a session
    // starting exactly at midnight, under the closed window rule), even when they land in two merges.
    expect(truth.some((t) => t.started! % D === 0)).toBe(true);
    // (Read again as stored, so unchanged: an update is a change of content.)
    expect(s.sessions).toMatchObject({ updated: 0, unchanged: truth.length - 1 });
    expect(s.sessions.written).toBe(0);
    const pq = (await readParquetDataset(dataDir)).flatMap((p) => p.rows).filter((r) => r.session_id === one!.session_id);
    expect(pq.map((r) => r.external_notes)).toEqual(['newer']);
  });

  it('a store written with the former schema (sessions with a primary key) is migrated, rows intact', async () => {
    const dataDir = await tempDir();
    await runBackfill({ ...base(dataDir), from: FROM, to: FROM + 3 * D });
    const db = join(dataDir, 'sessions.duckdb');
    // Rebuild the table as schema 1 had it.
    await sql(
      db,
      `CREATE TABLE s1 AS SELECT * FROM sessions; DROP TABLE sessions;
       CREATE TABLE sessions (session_id VARCHAR PRIMARY KEY, ${(await sql<{ column_name: string; data_type: string }>(db, `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'sessions' AND column_name <> 'session_id' ORDER BY ordinal_position`))
         .map((c) => `${c.column_name} ${c.data_type}`)
         .join(', ')});
       INSERT INTO sessions SELECT * FROM s1; DROP TABLE s1;
       DROP TABLE _parquet_pending; CREATE TABLE _parquet_pending (partition VARCHAR PRIMARY KEY);
       INSERT INTO _parquet_pending VALUES ('2026-01-01');
       UPDATE _session_etl_meta SET value = '1' WHERE key = 'schema_version'`,
      false,
    );
    expect(await sql(db, `SELECT 1 FROM duckdb_constraints() WHERE table_name = 'sessions' AND constraint_type = 'PRIMARY KEY'`)).toHaveLength(1);
    const day1 = join(dataDir, 'parquet', 'sessions', 'date=2026-01-01');
    await rm(day1, { recursive: true, force: true });
    const s = await runBackfill({ ...base(dataDir), from: FROM + 2 * D, to: TO });
    expect(s.outcome).toBe('succeeded');
    // The partition schema 1 had marked pending is rewritten, and the marks are in the new shape.
    expect(s.files.partitionsWritten).toContain('2026-01-01');
    expect(existsSync(join(day1, 'part-0.parquet'))).toBe(true);
    expect(await sql(db, 'SELECT partition, gen FROM _parquet_pending')).toEqual([]);
    expect(await sql(db, `SELECT 1 FROM duckdb_constraints() WHERE table_name = 'sessions' AND constraint_type = 'PRIMARY KEY'`)).toHaveLength(0);
    expect(await sql<{ value: string }>(db, `SELECT value FROM _session_etl_meta WHERE key = 'schema_version'`)).toEqual([{ value: String(SCHEMA_VERSION) }]);
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, TO);
    const rows = await readDuckDbSessions(dataDir);
    expect(rows.length).toBe(truth.length);
    const byId = new Map(rows.map((r) => [r.session_id, r]));
    for (const t of truth) expect(byId.get(t.id)).toMatchObject(expectedRow(t));
  });
});
