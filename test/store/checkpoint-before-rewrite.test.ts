/**
 * A many-account store's days are rewritten when every account of the run covers them: all of them
 * at the end, from a table the run has not checkpointed, whose rows then fill DuckDB's pool while
 * each COPY sorts its day (docs/benchmarks.md "Where the memory goes at 200 × 2,000"). Such a
 * rewrite of several days checkpoints the table first, when its write-ahead log holds 4 MiB or more
 * (a checkpoint may renumber row ids, which the merge's new/updated counts rely on: the run's floor
 * is found again after it, checkpoint-floor.test.ts). A real run of three accounts against the
 * emulator; the WAL file is read when the rewrite of the days has written them.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBatch, type AccountJob } from '../../src/pipeline/run.js';
import { CHECKPOINT_BEFORE_REWRITE_WAL_BYTES } from '../../src/store/table-sink.js';
import type { Logger } from '../../src/util/logger.js';
import { useEmulator } from '../helpers/emulator-fixture.js';

const D = 86_400;
const FROM = 1767225600; // 2026-01-01
const DAYS = 6;
const TO = FROM + DAYS * D;
const NOW = TO + 3 * 3600;

const fx = useEmulator({ seed: 18, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 1_500 }, { prefix: 'session-etl-ckpt-rewrite-' });

describe('a many-account run checkpoints before it rewrites its days', () => {
  it('the WAL is checkpointed before the days are written, and the counts stay exact', async () => {
    const dataDir = await fx.tempDir();
    const wal = join(dataDir, 'sessions.duckdb.wal');
    const walSize = () => {
      try {
        return statSync(wal).size;
      } catch {
        return 0;
      }
    };
    // The WAL's size each time several days have just been written to Parquet (before their marks are cleared).
    const atRewrite: number[] = [];
    const checkpoints: Array<{ walBytes: number; walBytesAfter: number }> = [];
    const noop = () => {};
    const logger: Logger = {
      debug: (obj, msg) => {
        if (/^\d+ Parquet days rewritten/.test(msg ?? '')) atRewrite.push(walSize());
        if (msg?.startsWith('checkpointed the store before rewriting')) checkpoints.push(obj as { walBytes: number; walBytesAfter: number });
      },
      info: noop,
      warn: noop,
      error: noop,
    };
    // One window an account: when the last account's is committed, every day is ready at once.
    const jobs: AccountJob[] = ['a', 'b', 'c'].map((account) => ({
      account,
      kind: 'backfill',
      opts: { reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, from: FROM, to: TO, chunkSeconds: DAYS * D, now: () => NOW * 1000, sleep: async () => {} },
    }));
    const results = await runBatch({ dataDir, accounts: 'many', concurrency: 3, logger, sleep: async () => {} }, jobs);
    for (const r of results) expect(r.ok, String(r.error)).toBe(true);

    expect(checkpoints.length).toBeGreaterThanOrEqual(1);
    for (const c of checkpoints) {
      expect(c.walBytes).toBeGreaterThanOrEqual(CHECKPOINT_BEFORE_REWRITE_WAL_BYTES);
      expect(c.walBytesAfter).toBeLessThan(c.walBytes / 4);
    }
    // Without the checkpoint the WAL holds every row merged by then (15 MB and more here).
    expect(atRewrite.length).toBeGreaterThanOrEqual(1);
    expect(Math.min(...atRewrite)).toBeLessThan(CHECKPOINT_BEFORE_REWRITE_WAL_BYTES);

    // Every account's sessions new, none counted twice: the same as the rows stored.
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const inst = await DuckDBInstance.create(join(dataDir, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
    const conn = await inst.connect();
    try {
      const rows = (await conn.runAndReadAll('SELECT account, count(*)::INTEGER AS n FROM sessions GROUP BY 1 ORDER BY 1')).getRowObjectsJS() as Array<{ account: string; n: number }>;
      expect(rows.map((r) => r.account)).toEqual(['a', 'b', 'c']);
      for (const r of results) {
        const stored = rows.find((x) => x.account === r.account)!.n;
        expect(stored).toBeGreaterThan(DAYS * 1_000);
        expect(r.summary!.sessions.new).toBe(stored);
        expect(r.summary!.sessions.updated ?? 0).toBe(0);
      }
    } finally {
      conn.closeSync();
      inst.closeSync();
    }
  }, 120_000);

  it('a second run over days stored and new, one-day windows (sessions two windows return): new and unchanged exact', async () => {
    const dataDir = await fx.tempDir();
    const checkpoints: Array<Record<string, unknown>> = [];
    const noop = () => {};
    const logger: Logger = {
      debug: (obj, msg) => void (msg?.startsWith('checkpointed the store before rewriting') && checkpoints.push(obj as Record<string, unknown>)),
      info: noop,
      warn: noop,
      error: noop,
    };
    const jobs = (to: number): AccountJob[] =>
      ['a', 'b', 'c'].map((account) => ({
        account,
        kind: 'backfill',
        opts: { reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, from: FROM, to, chunkSeconds: D, now: () => NOW * 1000, sleep: async () => {} },
      }));
    const stored = async (): Promise<Map<string, number>> => {
      const { DuckDBInstance } = await import('@duckdb/node-api');
      const inst = await DuckDBInstance.create(join(dataDir, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
      const conn = await inst.connect();
      try {
        const rows = (await conn.runAndReadAll('SELECT account, count(*)::INTEGER AS n FROM sessions GROUP BY 1')).getRowObjectsJS() as Array<{ account: string; n: number }>;
        return new Map(rows.map((r) => [r.account, r.n]));
      } finally {
        conn.closeSync();
        inst.closeSync();
      }
    };
    const first = await runBatch({ dataDir, accounts: 'many', concurrency: 3, logger, sleep: async () => {} }, jobs(FROM + 2 * D));
    for (const r of first) expect(r.ok, String(r.error)).toBe(true);
    const before = await stored();
    const second = await runBatch({ dataDir, accounts: 'many', concurrency: 3, logger, sleep: async () => {} }, jobs(TO));
    const after = await stored();
    for (const r of second) {
      expect(r.ok, String(r.error)).toBe(true);
      const s = r.summary!.sessions;
      expect(s.new, r.account).toBe(after.get(r.account)! - before.get(r.account)!);
      expect(s.updated ?? 0, r.account).toBe(0);
      expect(s.unchanged, r.account).toBeGreaterThanOrEqual(before.get(r.account)!);
    }
  }, 120_000);
});
