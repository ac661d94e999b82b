/**
 * Back-pressure from the merges (src/pipeline/merge-room.ts, issue 39): a long-text backfill at the
 * budget's floor, against the emulator over HTTP into a real DuckDB file. Before each request the
 * test counts the records of the files in pending/ (committed or handed to their commit, and not
 * merged yet): they never go beyond the bound the run logs (two row groups) and one window, where
 * without the bound the fetch ran hundreds of thousands of rows ahead of the merges; and every
 * session is stored exactly once.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/run.js';
import { MIN_BUDGET } from '../../src/config/memory-budget.js';
import { captureLogger } from '../helpers/capture.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const DAYS = 40;
const TO = FROM + DAYS * D;
const NOW = TO + D;
const PER_DAY = 1_500;

const fx = useEmulator({ seed: 39, from: FROM, to: NOW, now: NOW, sessionsPerDay: PER_DAY, longNotes: true }, { prefix: 'session-etl-merge-room-' });

/** Records in the record files under `dir` (0 when it does not exist); a file merged and removed meanwhile counts nothing. */
async function pendingRows(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let rows = 0;
  for (const n of names.filter((x) => x.endsWith('.ndjson'))) {
    const bytes = await readFile(join(dir, n)).catch(() => undefined);
    if (!bytes || bytes.length === 0) continue;
    let lines = 0;
    for (let i = bytes.indexOf(0x0a); i >= 0; i = bytes.indexOf(0x0a, i + 1)) lines++;
    rows += bytes[bytes.length - 1] === 0x0a ? lines : lines + 1;
  }
  return rows;
}

describe('merge back-pressure', () => {
  it(`at the budget's floor the rows waiting for their merge stay within two row groups and a window; every session stored once`, async () => {
    const dataDir = join(await fx.tempDir(), 'data');
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, TO);
    expect(truth.length).toBeGreaterThan(50_000);
    // The largest window (a day, at most a few hundred sessions more than PER_DAY).
    const perDay = new Map<number, number>();
    for (const s of truth) perDay.set(Math.floor((s.started ?? 0) / D), (perDay.get(Math.floor((s.started ?? 0) / D)) ?? 0) + 1);
    const window = Math.max(...perDay.values());
    const logger = captureLogger();
    let most = 0;
    const fetchCounting: typeof fetch = async (input, init) => {
      most = Math.max(most, await pendingRows(join(dataDir, 'pending')));
      return fetch(input, init);
    };
    const s = await runBackfill({
      reportingUrl: fx.emu.url,
      apiKey: fx.emu.apiKey,
      dataDir,
      format: 'duckdb',
      from: FROM,
      to: TO,
      concurrency: 4,
      memoryLimit: { value: MIN_BUDGET, name: 'memoryLimit' },
      fetch: fetchCounting,
      logger,
      now: () => NOW * 1000,
      sleep: async () => {},
    });
    expect(s.outcome).toBe('succeeded');

    const line = logger.lines.map((l) => JSON.parse(l) as { mergeBacklog?: { peakRows: number; limitRows: number; waits: number } }).find((l) => l.mergeBacklog);
    expect(line?.mergeBacklog, 'the debug line of the merge backlog').toBeDefined();
    const { limitRows, peakRows, waits } = line!.mergeBacklog!;
    // Two row groups of long text at the floor: a few thousand rows each, far below the run's rows.
    expect(limitRows).toBeLessThan(truth.length / 2);
    // The fetch did wait for the merges, and what waited stayed within the bound and a window
    // (a window goes while less than a row group waits; a file cut by a merge is counted twice for a moment).
    expect(waits).toBeGreaterThan(0);
    expect(peakRows).toBeLessThanOrEqual(limitRows + window);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(limitRows + 2 * window);

    const stored = (await readDuckDbSessions(dataDir)).map((r) => r.session_id);
    expect(stored.length).toBe(truth.length);
    expect(stored).toEqual(truth.map((t) => t.id).sort());
  }, 180_000);
});
