/** The state snapshot (state.json): what a run publishes for readers, and its validated reader. */
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runBackfill, type PipelineOptions } from '../../src/pipeline/run.js';
import { DataDirError } from '../../src/store/errors.js';
import { readStateSnapshot } from '../../src/store/state-snapshot.js';
import { readStatus } from '../../src/store/status.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const NOW = FROM + 5 * D;

const fx = useEmulator({ seed: 7, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 50 }, { prefix: 'session-etl-state-' });
const tempDir = () => fx.tempDir();

function base(dataDir: string, extra: Partial<PipelineOptions> = {}): PipelineOptions {
  return { reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', now: () => NOW * 1000, sleep: async () => {}, ...extra };
}

describe('state snapshot', () => {
  it('a run leaves a snapshot that says what status says, with every _runs column, mode 0640 whatever the umask', async () => {
    const dataDir = await tempDir();
    const old = process.umask(0o000);
    try {
      await runBackfill({ ...base(dataDir), from: FROM, to: FROM + 2 * D });
      await runBackfill({ ...base(dataDir, { now: () => (NOW + 60) * 1000 }), from: FROM + 3 * D, to: FROM + 4 * D });
    } finally {
      process.umask(old);
    }
    const snap = await readStateSnapshot(dataDir);
    expect(snap).not.toBe(null);
    expect((await stat(join(dataDir, 'state.json'))).mode & 0o777).toBe(0o640);
    const status = await readStatus(dataDir, NOW * 1000);
    expect(status.source).toBe('duckdb');
    expect(snap!.running).toBe(null);
    expect(snap!.writtenAt).toBe(new Date((NOW + 60) * 1000).toISOString());
    expect(snap!.rows).toBe(status.rows);
    expect(snap!.rows).toBe((await readDuckDbSessions(dataDir)).length);
    expect(snap!.checkpoint).toBe('2026-01-03T00:00:00Z');
    expect(snap!.coverageHoles).toEqual([{ from: '2026-01-03T00:00:00Z', to: '2026-01-04T00:00:00Z' }]);
    expect(snap!.lastRuns).toEqual(status.lastRuns);
    expect(snap!.lastRuns).toHaveLength(2);
    // The history's rows as stored, counters included (new columns flow through as they are added).
    expect(snap!.lastRuns[0]).toMatchObject({ kind: 'backfill', outcome: 'succeeded', windows: 1, requests: 1, error: null });
    expect(Object.keys(snap!.lastRuns[0]!)).toEqual(expect.arrayContaining(['run_id', 'started_at', 'ended_at', 'sessions_written', 'retries', 'rate_limited']));
    // No secret in it.
    expect(JSON.stringify(snap)).not.toContain(fx.emu.apiKey);
  });

  it('reads null when there is none, and refuses a file that is not a snapshot, naming it', async () => {
    const dataDir = await tempDir();
    expect(await readStateSnapshot(dataDir)).toBe(null);
    await writeFile(join(dataDir, 'state.json'), '{"version": 1, "format": "both"');
    await expect(readStateSnapshot(dataDir)).rejects.toThrow(DataDirError);
    await expect(readStateSnapshot(dataDir)).rejects.toThrow(/state\.json is not a session-etl state snapshot \(not JSON\)/);
    await writeFile(join(dataDir, 'state.json'), JSON.stringify({ version: 1, format: 'both', writtenAt: 'x' }));
    await expect(readStateSnapshot(dataDir)).rejects.toThrow(/state snapshot this session-etl can read \(checkpoint: /);
  });
});
