import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/emulator/index.js';
import { runBackfill, runExport, type PipelineOptions } from '../../src/pipeline/run.js';
import { RunFailedError, RunInterruptedError } from '../../src/pipeline/errors.js';
import { countWindows, cutWindows, MAX_PLANNED_WINDOWS } from '../../src/time/windows.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { expectedRow, parquetRowsComparable, readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const DAYS = 6;
const TO = FROM + DAYS * D;
const NOW = TO + 3 * 3600; // the emulator's and the pipeline's "now"

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-test-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function base(emu: Emulator, dataDir: string, extra: Partial<PipelineOptions> = {}): PipelineOptions {
  return {
    reportingUrl: emu.url,
    apiKey: emu.apiKey,
    dataDir,
    format: 'both',
    now: () => NOW * 1000,
    sleep: async () => {},
    ...extra,
  };
}

function sortById<T extends { session_id: unknown }>(rows: T[]): T[] {
  return [...rows].sort((a, b) => String(a.session_id).localeCompare(String(b.session_id)));
}

function strip<T extends Record<string, unknown>>(rows: T[]): Array<Omit<T, 'extracted_at'>> {
  return rows.map(({ extracted_at: _x, ...rest }) => rest);
}

describe.each(['closed', 'half-open', 'overlap'] as const)('backfill under the %s window rule', (windowRule) => {
  const fx = useEmulator({ seed: 3, from: FROM - 2 * D, to: NOW, now: NOW, sessionsPerDay: 120, windowRule }, { prefix: 'session-etl-backfill-' });

  it('stores exactly the emulator data, once each, in DuckDB and Parquet', async () => {
    const dataDir = await tempDir();
    const s = await runBackfill({ ...base(fx.emu, dataDir, { chunkSeconds: 6 * 3600 }), from: FROM, to: TO });
    expect(s.outcome).toBe('succeeded');
    expect(s.windows.total).toBe(DAYS * 4);

    const truth = fx.emu.dataset.sessionsStartedIn(FROM, TO);
    expect(truth.length).toBeGreaterThan(300);
    const expected = sortById(truth.map(expectedRow));
    const db = await readDuckDbSessions(dataDir);
    const ids = db.map((r) => r.session_id);
    expect(new Set(ids).size).toBe(ids.length);
    // Every session that started in the range is there, with every value equal.
    const inRange = db.filter((r) => (r.started_at as number) >= FROM && (r.started_at as number) < TO);
    expect(strip(inRange)).toEqual(expected);
    // Anything else the server's rule returned (the session at exactly `to`, or sessions overlapping the range) is the server's own data.
    for (const r of db.filter((x) => !inRange.includes(x))) {
      expect(strip([r])[0]).toEqual(expectedRow(fx.emu.dataset.byId(r.session_id as string)!));
    }
    for (const r of db) expect(r.extracted_at).toBeCloseTo(NOW, 0);

    const parts = await readParquetDataset(dataDir);
    const pq = parquetRowsComparable(parts);
    expect(pq).toEqual(db);
    for (const p of parts) {
      expect(p.file.endsWith('/part-0.parquet')).toBe(true);
      // Partition by the record's own UTC date, rows sorted by started_at.
      for (const r of p.rows) expect(`date=${(r.started_at as Date).toISOString().slice(0, 10)}`).toBe(p.partition);
      const starts = p.rows.map((r) => (r.started_at as Date).getTime());
      expect(starts).toEqual([...starts].sort((a, b) => a - b));
    }
  });
});

describe('backfill behaviours', () => {
  const fx = useEmulator({ seed: 11, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 150 }, { prefix: 'session-etl-backfill-' });
  afterEach(() => {
    fx.emu.setFaults({});
    fx.emu.setNow(NOW);
  });

  it('writes Parquet with UTC-adjusted timestamps, strings that keep leading zeros, zstd', async () => {
    const dataDir = await tempDir();
    await runBackfill({ ...base(fx.emu, dataDir), from: FROM, to: FROM + 2 * D });
    const parts = await readParquetDataset(dataDir);
    const schema = parts[0]!.schema;
    const col = (name: string) => schema.children.find((c) => c.element.name === name)!.element;
    expect(col('started_at').logical_type).toMatchObject({ type: 'TIMESTAMP', isAdjustedToUTC: true });
    expect(col('extracted_at').logical_type).toMatchObject({ type: 'TIMESTAMP', isAdjustedToUTC: true });
    expect(col('pin').logical_type?.type ?? col('pin').converted_type).toMatch(/STRING|UTF8/);
    expect(col('recording').type).toBe('BOOLEAN');
    expect(col('duration_seconds').type).toBe('INT64');
    const pins = parts.flatMap((p) => p.rows.map((r) => r.pin as string | null)).filter(Boolean);
    expect(pins.some((p) => p!.startsWith('0'))).toBe(true);
    const { parquetMetadataAsync, asyncBufferFromFile } = await import('hyparquet');
    const meta = await parquetMetadataAsync(await asyncBufferFromFile(parts[0]!.file));
    expect(meta.row_groups[0]!.columns[0]!.meta_data!.codec).toBe('ZSTD');
  });

  it('the progress and the summary count the same thing: records fetched (a session on a window boundary twice); written counts sessions once', async () => {
    const dataDir = await tempDir();
    let last = -1;
    const s = await runBackfill({ ...base(fx.emu, dataDir), from: FROM, to: FROM + 3 * D, onProgress: (p) => (last = p.sessions) });
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, FROM + 3 * D);
    // The windows end inclusive (closed rule): a session starting at an inner midnight comes twice.
    const twice = truth.filter((t) => t.started! % D === 0 && t.started! > FROM).length;
    expect(s.sessions.fetched).toBe(last);
    expect(s.sessions.fetched).toBe(truth.length + twice + fx.emu.dataset.sessionsStartedIn(FROM + 3 * D, FROM + 3 * D + 1).length);
    expect(s.sessions.written).toBe(truth.length + fx.emu.dataset.sessionsStartedIn(FROM + 3 * D, FROM + 3 * D + 1).length);
  });

  it('re-running is idempotent: same rows, no duplicates, everything counted as re-read unchanged (not updated)', async () => {
    const dataDir = await tempDir();
    const first = await runBackfill({ ...base(fx.emu, dataDir), from: FROM, to: FROM + 3 * D });
    const before = await readDuckDbSessions(dataDir);
    const second = await runBackfill({ ...base(fx.emu, dataDir), from: FROM, to: FROM + 3 * D });
    expect(second.resumed).toBe(false);
    const after = await readDuckDbSessions(dataDir);
    expect(first.sessions.new).toBe(before.length);
    expect(second.sessions.new).toBe(0);
    // Read again as stored: only extracted_at moved. Not an update (issue 28).
    expect(second.sessions).toMatchObject({ updated: 0, unchanged: after.length, written: 0 });
    expect(strip(after)).toEqual(strip(before));
    expect(parquetRowsComparable(await readParquetDataset(dataDir))).toEqual(after);
  });

  it('parquet-only re-runs never duplicate either', async () => {
    const dataDir = await tempDir();
    await runBackfill({ ...base(fx.emu, dataDir, { format: 'parquet' }), from: FROM, to: FROM + 2 * D });
    const s2 = await runBackfill({ ...base(fx.emu, dataDir, { format: 'parquet' }), from: FROM, to: FROM + 2 * D });
    expect(s2.sessions.new).toBe(0);
    const rows = parquetRowsComparable(await readParquetDataset(dataDir));
    // Read again as stored in the Parquet files: unchanged, not updated.
    expect(s2.sessions).toMatchObject({ updated: 0, unchanged: rows.length });
    const ids = rows.map((r) => r.session_id);
    expect(new Set(ids).size).toBe(ids.length);
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, FROM + 2 * D).map(expectedRow);
    expect(strip(rows.filter((r) => (r.started_at as number) < FROM + 2 * D) as never)).toEqual(sortById(truth));
    expect((await readdir(dataDir)).sort()).toEqual(['.tmp', 'parquet', 'state.duckdb', 'state.json']);
  });

  it.each([
    ['a result cap (GraphQL error)', { maxResults: 40 }, {}],
    ['a span cap (GraphQL error)', { maxSpanSeconds: 3 * 3600 }, {}],
    ['a silent truncation, with --max-results-per-query', { truncateResultsTo: 40 }, { maxResultsPerQuery: 40 }],
  ])('bisects under %s and still stores everything', async (_name, faults, extra) => {
    const dataDir = await tempDir();
    fx.emu.setFaults(faults);
    const s = await runBackfill({ ...base(fx.emu, dataDir, extra), from: FROM, to: FROM + 2 * D });
    expect(s.outcome).toBe('succeeded');
    expect(s.bisections).toBeGreaterThan(0);
    const truth = sortById(fx.emu.dataset.sessionsStartedIn(FROM, FROM + 2 * D).map(expectedRow));
    const db = await readDuckDbSessions(dataDir);
    expect(strip(db.filter((r) => (r.started_at as number) < FROM + 2 * D))).toEqual(truth);
  });

  it('fails, naming the window and the server message, when even the smallest window is refused', async () => {
    const dataDir = await tempDir();
    fx.emu.setFaults({ maxResults: 1 });
    const err = await runBackfill({ ...base(fx.emu, dataDir, { minChunkSeconds: 6 * 3600 }), from: FROM, to: FROM + D }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunFailedError);
    expect((err as Error).message).toMatch(/window 2026-01-01T\d\d:00:00Z–2026-01-01T\d\d:00:00Z failed/);
    expect((err as Error).message).toMatch(/maximum result size/);
    expect((err as Error).message).toMatch(/run the same command again/);
  });

  it('a newer version of a session replaces the older one (running sessions end)', async () => {
    const dataDir = await tempDir();
    // A weekday at 15:00 UTC: busy hours, so some sessions are still running.
    const early = TO - D + 15 * 3600;
    fx.emu.setNow(early);
    await runBackfill({ ...base(fx.emu, dataDir, { now: () => early * 1000, settleSeconds: 0 }), from: TO - 2 * D, to: early });
    const running = (await readDuckDbSessions(dataDir)).filter((r) => r.ended_at === null);
    expect(running.length).toBeGreaterThan(0);
    fx.emu.setNow(NOW);
    const s = await runExport({ ...base(fx.emu, dataDir) });
    // Updated: exactly the sessions whose content changed (the running ones, now ended); the rest of
    // the lookback was read again as stored and counts as unchanged.
    expect(s.sessions.updated).toBe(running.length);
    expect(s.sessions.unchanged).toBeGreaterThan(0);
    const after = new Map((await readDuckDbSessions(dataDir)).map((r) => [r.session_id, r]));
    for (const r of running) {
      const now = after.get(r.session_id)!;
      expect(now.ended_at).not.toBeNull();
      expect(now.extracted_at).toBeGreaterThan(r.extracted_at);
      expect(now).toMatchObject(expectedRow(fx.emu.dataset.byId(r.session_id)!));
    }
  });

  it('an interrupted backfill resumes: finished windows are not fetched again', async () => {
    const dataDir = await tempDir();
    const stop = new AbortController();
    const err = await runBackfill({
      ...base(fx.emu, dataDir, { concurrency: 1, stopSignal: stop.signal }),
      from: FROM,
      to: FROM + 6 * D,
      onProgress: (p) => {
        if (p.windowsDone >= 1) stop.abort();
      },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunInterruptedError);
    const before = fx.emu.stats().requests;
    const s = await runBackfill({ ...base(fx.emu, dataDir, { concurrency: 1 }), from: FROM, to: FROM + 6 * D });
    expect(s.resumed).toBe(true);
    expect(s.windows.total).toBeLessThan(6);
    expect(fx.emu.stats().requests - before).toBe(s.windows.total);
    const truth = sortById(fx.emu.dataset.sessionsStartedIn(FROM, FROM + 6 * D).map(expectedRow));
    const db = await readDuckDbSessions(dataDir);
    expect(strip(db.filter((r) => (r.started_at as number) < FROM + 6 * D))).toEqual(truth);
    // Once complete, the same backfill runs whole again (a refresh).
    const again = await runBackfill({ ...base(fx.emu, dataDir, { concurrency: 1 }), from: FROM, to: FROM + 6 * D });
    expect(again.resumed).toBe(false);
    expect(again.windows.total).toBe(6);
  });

  it('export: the first run needs --since, later runs continue from the checkpoint minus lookback', async () => {
    const dataDir = await tempDir();
    await expect(runExport(base(fx.emu, dataDir))).rejects.toThrow(/--since/);
    expect(await readdir(dataDir)).toEqual([]);
    const first = await runExport({ ...base(fx.emu, dataDir, { now: () => (FROM + 2 * D) * 1000 }), since: FROM });
    expect(first.range).toEqual({ from: '2026-01-01T00:00:00Z', to: '2026-01-02T23:50:00Z' });
    expect(first.checkpoint).toBe('2026-01-02T23:50:00Z');
    const second = await runExport({ ...base(fx.emu, dataDir, { now: () => (FROM + 4 * D) * 1000 }) });
    expect(second.range).toEqual({ from: '2026-01-01T23:50:00Z', to: '2026-01-04T23:50:00Z' });
    expect(second.checkpoint).toBe('2026-01-04T23:50:00Z');
    const truth = sortById(fx.emu.dataset.sessionsStartedIn(FROM, FROM + 4 * D - 600).map(expectedRow));
    const db = await readDuckDbSessions(dataDir);
    expect(strip(db.filter((r) => (r.started_at as number) < FROM + 4 * D - 600))).toEqual(truth);
  });
});

describe('plans too large to hold', () => {
  it('counts windows arithmetically, exactly as cutting them would', () => {
    for (const [from, to, chunk] of [
      [FROM, FROM + 1, 1],
      [FROM + 17, FROM + 3 * D + 5, 3600],
      [FROM - 1, FROM + 1, D],
      [FROM + 100, FROM + 200, D],
      [FROM + 3 * D, FROM + 40 * D + 7, 7 * D],
      [FROM, FROM, 60],
    ] as const) {
      expect({ from, to, chunk, n: countWindows(from, to, chunk) }).toEqual({ from, to, chunk, n: cutWindows(from, to, chunk).length });
    }
  });

  it('a backfill planning more than the bound is refused before anything is written; one just under it is not', async () => {
    const dataDir = join(await tempDir(), 'never');
    const emuUrl = 'http://127.0.0.1:9'; // never contacted
    const opts = { reportingUrl: emuUrl, apiKey: 'k', dataDir, format: 'both' as const, now: () => NOW * 1000, settleSeconds: 0, minChunkSeconds: 1 };
    await expect(runBackfill({ ...opts, from: 0, to: FROM, chunkSeconds: 1 })).rejects.toThrow(
      /makes 1,767,225,600 windows, more than the 1,000,000 one run can plan: give a bigger --chunk \(at least 30m for this range\)/,
    );
    expect(countWindows(0, FROM, 1800)).toBeLessThanOrEqual(MAX_PLANNED_WINDOWS);
    await expect(runBackfill({ ...opts, from: FROM - MAX_PLANNED_WINDOWS - 1, to: FROM, chunkSeconds: 1 })).rejects.toThrow(RangeError);
    await expect(runBackfill({ ...opts, minChunkSeconds: 60, from: FROM, to: NOW, chunkSeconds: 30 })).rejects.toThrow(/--chunk 30s is shorter than --min-chunk 1m/);
    await expect(runBackfill({ ...opts, from: FROM, to: NOW, maxRequestsPerSecond: 1e-300 })).rejects.toThrow(/at least 0\.01/);
    await expect(runBackfill({ ...opts, from: FROM, to: NOW, maxRequestsPerSecond: Infinity })).rejects.toThrow(/at least 0\.01/);
    expect(existsSync(dataDir)).toBe(false);
    expect(countWindows(FROM - MAX_PLANNED_WINDOWS, FROM, 1)).toBe(MAX_PLANNED_WINDOWS);
  });
});
