/**
 * The checkpoint before a many-account store's rewrite of several days (table-sink.ts) may vacuum
 * deleted rows and renumber the rows after them; a merge tells a session stored before the run
 * from one this run stored by its row id (merge.ts, runRowidFloor). After the checkpoint the floor
 * is found again: a session stored by this run and changed again after the checkpoint counts once
 * (new), not as an update of a session stored before the run. A real store, committed window by window.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/store/session-store.js';
import { captureLogger } from '../helpers/capture.js';

const D = 86_400;
const DAY1 = 1767225600; // 2026-01-01
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const NOTE = 'x'.repeat(1_500);
const record = (id: string, started: number, notes: string) => ({ id, companyId: 'c1', started, agent: { id: 'a1', name: 'Ann', email: null }, externalFields: { notes } });
const ndjson = (records: object[], extractedAt: number) => ({ bytes: Buffer.from(records.map((r) => JSON.stringify(r)).join('\n')), count: records.length, extractedAt });
const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('the run row-id floor after a checkpoint before the rewrites', () => {
  it('a session this run stored, changed again after the checkpoint, is not counted as updated', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-ckpt-floor-'));
    dirs.push(dir);
    const logger = captureLogger();
    const open = () => SessionStore.open({ dataDir: dir, format: 'both', accounts: 'many', logger });
    const a = 'acme';
    // Before the run: 4,000 sessions on day 1.
    let store = await open();
    await store.commitWindow({ account: a, window: { start: DAY1, end: DAY1 + D }, ndjson: ndjson(ids('old', 4_000).map((id, i) => record(id, DAY1 + i, NOTE)), 1000), rejected: [], runId: 'r0' });
    await store.flush();
    await store.close();

    store = await open();
    try {
      await store.beginRunCounts();
      // The run: every session of day 1 changed (their old rows deleted), and 4,000 new on days 2 and 3.
      await store.commitWindow({ account: a, window: { start: DAY1, end: DAY1 + D }, ndjson: ndjson(ids('old', 4_000).map((id, i) => record(id, DAY1 + i, `${NOTE}v2`)), 2000), rejected: [], runId: 'r1' });
      await store.commitWindow({
        account: a,
        window: { start: DAY1 + D, end: DAY1 + 3 * D },
        ndjson: ndjson(ids('new', 4_000).map((id, i) => record(id, DAY1 + D + i * 40, NOTE)), 2000),
        rejected: [],
        runId: 'r1',
      });
      const first = await store.flush();
      expect(logger.lines.some((l) => l.includes('checkpointed the store before rewriting'))).toBe(true);
      // After the checkpoint: sessions this run stored, changed again.
      await store.commitWindow({ account: a, window: { start: DAY1 + D, end: DAY1 + 2 * D }, ndjson: ndjson(ids('new', 100).map((id, i) => record(id, DAY1 + D + i * 40, `${NOTE}v3`)), 3000), rejected: [], runId: 'r1' });
      const second = await store.flush();
      const total = (k: 'inserted' | 'updated') => [first, second].reduce((n, f) => n + (f.counts.get(a)?.[k] ?? 0), 0);
      expect(total('updated')).toBe(4_000);
      expect(total('inserted')).toBe(4_000);
    } finally {
      await store.close();
    }
  }, 120_000);
});
