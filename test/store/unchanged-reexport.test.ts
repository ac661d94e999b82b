/**
 * An export that reads again what is stored (issue 38): a backfill run twice over the same range, an
 * incremental export re-reading its lookback. A session read again with the content it is stored
 * with keeps its stored row (its extracted_at too) and its day's Parquet file is not rewritten: a
 * day is rewritten only when a session in it was added or changed.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBackfill, runExport, type PipelineOptions } from '../../src/pipeline/run.js';
import type { RunSummary } from '../../src/pipeline/options.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { parquetRowsComparable, readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D, isoDay } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01, a Thursday
const TO = FROM + 4 * D;
const NOW = TO + 3 * 3600;
/** Friday 2026-01-02 at 15:00 UTC: busy hours, so some sessions are still running. */
const EARLY = FROM + D + 15 * 3600;

const fx = useEmulator({ seed: 23, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 120 }, { prefix: 'session-etl-unchanged-' });

type Format = 'both' | 'parquet' | 'duckdb';

/** Each run fetches at its own time (extracted_at), one second after the one before. */
let clock = 0;
function opts(dataDir: string, format: Format, now: number, extra: Partial<PipelineOptions> = {}): PipelineOptions {
  const at = now + ++clock;
  return { reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format, now: () => at * 1000, sleep: async () => {}, settleSeconds: 0, ...extra };
}

/** Every Parquet day file: its inode, mtime and a hash of its bytes, by day. */
async function dayFiles(dataDir: string): Promise<Map<string, { ino: number; mtimeMs: number; sha: string }>> {
  const root = join(dataDir, 'parquet', 'sessions');
  const out = new Map<string, { ino: number; mtimeMs: number; sha: string }>();
  for (const day of (await readdir(root).catch(() => [] as string[])).sort()) {
    for (const f of await readdir(join(root, day))) {
      const path = join(root, day, f);
      const st = await stat(path);
      out.set(`${day}/${f}`, { ino: st.ino, mtimeMs: st.mtimeMs, sha: createHash('sha256').update(await readFile(path)).digest('hex') });
    }
  }
  return out;
}

/** extracted_at of every stored session, by id: from the table, or from the day files of a Parquet-only store. */
async function extractedAt(dataDir: string, format: Format): Promise<Map<string, number>> {
  const rows = format === 'parquet' ? parquetRowsComparable(await readParquetDataset(dataDir)) : await readDuckDbSessions(dataDir);
  return new Map(rows.map((r) => [String(r.session_id), Number(r.extracted_at)]));
}

function dayOf(t: number): string {
  return `date=${isoDay(t)}`;
}

function written(s: RunSummary): string[] {
  return [...s.files.partitionsWritten].sort();
}

describe.each(['both', 'parquet', 'duckdb'] as const)('format %s', (format) => {
  it('a backfill run twice over the same range stores nothing again; a changed session rewrites exactly its day', async () => {
    const dataDir = await fx.tempDir();
    fx.emu.setNow(EARLY);
    try {
      const first = await runBackfill({ ...opts(dataDir, format, EARLY), from: FROM, to: EARLY });
      expect(first.outcome).toBe('succeeded');
      const files = await dayFiles(dataDir);
      expect(files.size).toBe(format === 'duckdb' ? 0 : 2);
      const stored = await extractedAt(dataDir, format);

      // The same range again, the source unchanged.
      const again = await runBackfill({ ...opts(dataDir, format, EARLY), from: FROM, to: EARLY });
      expect(again.sessions).toMatchObject({ new: 0, updated: 0, unchanged: stored.size, written: 0 });
      expect(written(again)).toEqual([]);
      expect(await dayFiles(dataDir)).toEqual(files);
      expect(await extractedAt(dataDir, format)).toEqual(stored);

      // Later, the sessions running at EARLY have ended: only their day (2026-01-02) changes.
      const running = (format === 'parquet' ? parquetRowsComparable(await readParquetDataset(dataDir)) : await readDuckDbSessions(dataDir))
        .filter((r) => r.ended_at === null)
        .map((r) => ({ id: String(r.session_id), started: Number(r.started_at) }));
      expect(running.length).toBeGreaterThan(0);
      expect(running.every((r) => dayOf(r.started) === 'date=2026-01-02')).toBe(true);
      fx.emu.setNow(NOW);
      const changed = await runBackfill({ ...opts(dataDir, format, NOW), from: FROM, to: EARLY });
      expect(changed.sessions).toMatchObject({ new: 0, updated: running.length, unchanged: stored.size - running.length });
      const after = await dayFiles(dataDir);
      if (format !== 'duckdb') {
        expect(written(changed)).toEqual(['2026-01-02']);
        expect(after.get('date=2026-01-01/part-0.parquet')).toEqual(files.get('date=2026-01-01/part-0.parquet'));
        expect(after.get('date=2026-01-02/part-0.parquet')!.sha).not.toBe(files.get('date=2026-01-02/part-0.parquet')!.sha);
      }
      // The changed sessions were fetched again; every other row is as it was stored.
      const now = await extractedAt(dataDir, format);
      const ids = new Set(running.map((r) => r.id));
      for (const [id, at] of now) {
        if (ids.has(id)) expect(at).toBeGreaterThan(stored.get(id)!);
        else expect(at, id).toBe(stored.get(id));
      }
    } finally {
      fx.emu.setNow(NOW);
    }
  });

  it('an incremental export re-reading its lookback, the source unchanged, rewrites no day', async () => {
    const dataDir = await fx.tempDir();
    await runBackfill({ ...opts(dataDir, format, NOW), from: FROM, to: TO });
    const first = await runExport(opts(dataDir, format, NOW));
    expect(first.outcome).toBe('succeeded');
    const files = await dayFiles(dataDir);
    const stored = await extractedAt(dataDir, format);

    const again = await runExport(opts(dataDir, format, NOW));
    expect(again.sessions.unchanged).toBeGreaterThan(0);
    expect(again.sessions).toMatchObject({ new: 0, updated: 0, written: 0 });
    expect(written(again)).toEqual([]);
    expect(await dayFiles(dataDir)).toEqual(files);
    expect(await extractedAt(dataDir, format)).toEqual(stored);
  });
});
