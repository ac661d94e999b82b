/**
 * A new store attaches its file again at its first commit with rows (row groups sized from those
 * rows: store/row-groups.ts, duckdb.ts resizeRowGroups). A DETACH while another connection of the
 * instance held a transaction open (or ran a statement) left the old attachment alive: the ATTACH
 * failed, the commit with it, every later statement said "Catalog "store" does not exist", and a
 * CLI run died with SIGSEGV. Every connection a writer's Db hands out passes its gate
 * (store/read-gate.ts): the re-attach waits for the transaction, and the statements that come
 * meanwhile wait for the re-attach.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { MiB } from '../../src/config/memory-budget.js';
import { runBatch, type AccountJob } from '../../src/pipeline/run.js';
import { transactionEffect, type Db } from '../../src/store/duckdb.js';
import { rowGroupRows } from '../../src/store/row-groups.js';
import { SessionStore } from '../../src/store/session-store.js';
import { readStateSnapshot } from '../../src/store/state-snapshot.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import { useEmulator } from '../helpers/emulator-fixture.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const DAY = 1_767_225_600;
const NOW = DAY + 4 * 86_400 + 3 * 3600;

const fx = useEmulator({ seed: 11, from: DAY - 86_400, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-reattach-run-' });

function window(from: number, n: number) {
  const records = Array.from({ length: n }, (_, i) => ({
    id: `s${String(from + i).padStart(6, '0')}`,
    companyId: 'c1',
    started: DAY + from + i,
    ended: DAY + from + i + 60,
    duration: 60,
    agent: { id: 'a1', name: 'Ann', email: 'ann@example.com' },
    externalFields: { notes: 'short' },
  }));
  const bytes = Buffer.from(records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return { account: '', window: { start: DAY + from, end: DAY + from + n }, ndjson: { bytes, count: n, extractedAt: 1000 }, rejected: [], runId: 'r1' };
}

/** Whether the store's re-attach is waiting for readers (or running): the Db's gate, where there is one. */
function reattachPending(store: SessionStore): boolean {
  return (store as unknown as { db: Db }).db.gate?.exclusivePending ?? false;
}

describe("a new store's re-attach under readers on its other connections", () => {
  it('a transaction open on another connection at the first commit: the commit waits for it; it and every reader that came meanwhile answer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-reattach-'));
    dirs.push(dir);
    const bytes = 8 * MiB;
    const store = await SessionStore.open({ dataDir: dir, format: 'both', rowGroupBytes: bytes });
    const before = store.rowGroupRows;
    expect(before).toBe(rowGroupRows(bytes));
    // A reader inside a transaction on a connection of its own (verify's comparison opens one).
    const reader = await store.openConnection();
    await reader.run('BEGIN TRANSACTION');
    expect((await reader.runAndReadAll('SELECT count(*) AS n FROM _coverage')).getRowObjectsJS()).toEqual([{ n: 0n }]);

    let settled = false;
    const commit = store.commitWindow(window(0, 3_000)).then(
      (r) => r.written,
      (err: unknown) => `failed: ${String(err)}`,
    );
    void commit.finally(() => (settled = true));
    // The re-attach waits for the reader (or, as before the gate covered every connection, the commit failed at once).
    await vi.waitFor(() => expect(settled || reattachPending(store)).toBe(true), { timeout: 20_000, interval: 5 });
    // Statements of the store's other connections that come now wait for the re-attach, then answer.
    const meanwhile = Promise.all([store.coverage(''), store.lastRuns(), store.readConnection().then((c) => c.runAndReadAll('SELECT count(*) AS n FROM _runs'))]);
    // The reader's transaction still reads, and ends.
    expect((await reader.runAndReadAll('SELECT count(*) AS n FROM _coverage')).getRowObjectsJS()).toEqual([{ n: 0n }]);
    await reader.run('COMMIT');

    expect(await commit).toBe(3_000);
    const [coverage, runs, snapshotRead] = await meanwhile;
    // Read after the re-attach, before or after the commit's transaction.
    expect([[], [{ start: DAY, end: DAY + 3_000 }]]).toContainEqual(coverage);
    expect(runs).toEqual([]);
    expect(snapshotRead.getRowObjectsJS()).toEqual([{ n: 0n }]);
    expect(await store.coverage('')).toEqual([{ start: DAY, end: DAY + 3_000 }]);
    // Attached again with the row groups the short records fit, and the file works: the reader's connection too.
    expect(store.rowGroupRows).toBeGreaterThan(before);
    expect((await reader.runAndReadAll('SELECT count(*) AS n FROM _coverage')).getRowObjectsJS()).toEqual([{ n: 1n }]);
    await store.flush();
    expect((await reader.runAndReadAll('SELECT count(*) AS n FROM sessions')).getRowObjectsJS()).toEqual([{ n: 3_000n }]);
    reader.closeSync();
    await store.close();

    const again = await SessionStore.open({ dataDir: dir, readOnly: true });
    expect(await again.coverage('')).toEqual([{ start: DAY, end: DAY + 3_000 }]);
    await again.close();
  }, 60_000);

  it("a writer's connection refuses what would leave a statement running past the call (a stream, a prepared statement)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-reattach-'));
    dirs.push(dir);
    const store = await SessionStore.open({ dataDir: dir, format: 'duckdb' });
    const c = await store.openConnection();
    expect(() => c.stream('SELECT 1')).toThrow(/not available on a writer's connection/);
    expect(() => c.prepare('SELECT 1')).toThrow(/not available on a writer's connection/);
    c.closeSync();
    await store.close();
  });
});

describe('a first run into a new data directory', () => {
  it('with a transaction open on another connection of the store at its first commit (verify has one): the run succeeds, the state snapshot is written, nothing warns', async () => {
    const dataDir = await fx.tempDir();
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (obj: object, msg?: string) => void warnings.push(`${msg} ${JSON.stringify(obj)}`) };
    let reader: DuckDBConnection | undefined;
    let ended = false;
    let heldThroughReattach = false;
    let watching: Promise<void> = Promise.resolve();
    const job: AccountJob = {
      account: '',
      kind: 'backfill',
      opts: { reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, from: DAY, to: DAY + 4 * 86_400, now: () => NOW * 1000, sleep: async () => {} },
    };
    const results = await runBatch(
      {
        dataDir,
        accounts: 'single',
        logger,
        now: () => NOW * 1000,
        sleep: async () => {},
        // Once the store is open, before any window: a reader's transaction, ended once the first
        // commit's re-attach waits for it (or once the run is over, as before the gate covered it).
        prepare: async (store) => {
          const c = await store.openConnection();
          reader = c;
          await c.run('BEGIN TRANSACTION');
          await c.run('SELECT count(*) FROM _coverage');
          watching = vi
            .waitFor(() => expect(ended || reattachPending(store)).toBe(true), { timeout: 60_000, interval: 5 })
            .then(async () => {
              heldThroughReattach = !ended;
              await c.run('COMMIT');
            });
        },
      },
      [job],
    ).finally(() => (ended = true));
    await watching;
    reader?.closeSync();
    expect(results[0]?.error).toBeUndefined();
    expect(results[0]?.summary?.outcome).toBe('succeeded');
    expect(heldThroughReattach).toBe(true);
    expect(warnings).toEqual([]);
    const state = await readStateSnapshot(dataDir);
    expect(state?.running).toBeNull();
    expect(state?.rows).toBeGreaterThan(0);
  }, 120_000);
});

describe('transactionEffect', () => {
  it.each([
    ['BEGIN TRANSACTION', 'begin'],
    ['  begin', 'begin'],
    ['START TRANSACTION', 'begin'],
    ['COMMIT', 'end'],
    ['ROLLBACK', 'end'],
    ['ABORT', 'end'],
    ['END TRANSACTION', 'end'],
    ['BEGIN TRANSACTION;\nCREATE TABLE t (x INT);\nCREATE TABLE u (y INT)', 'begin'],
    ['BEGIN TRANSACTION; INSERT INTO t VALUES (1); COMMIT', 'end'],
    ['SELECT 1', undefined],
    ["SELECT 'BEGIN' AS begin_at, x AS committed FROM t", undefined],
    ['CREATE TABLE t (x INT); CREATE TABLE u (y INT)', undefined],
  ] as const)('%j: %s', (sql, effect) => {
    expect(transactionEffect(sql)).toBe(effect);
  });
});
