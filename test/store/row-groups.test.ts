/**
 * Row groups bounded by the memory budget's bytes (issue 39): the rows of a group from the budget's
 * share and the rows' measured size, and a writer's file really written in groups of that size.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_ROW_GROUP_BYTES, MiB, splitBudget } from '../../src/config/memory-budget.js';
import { SessionStore } from '../../src/store/session-store.js';
import { DEFAULT_ROW_BYTES, MAX_ROW_GROUP_ROWS, MERGE_GROUPS, MERGE_GROUPS_ROWS, MIN_ROW_GROUP_ROWS, mergeRows, ndjsonValueBytes, rowGroupRows } from '../../src/store/row-groups.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('ndjsonValueBytes', () => {
  it('counts the values, not the field names, nested objects too; null counts nothing', () => {
    const line = JSON.stringify({ id: 'abc', n: 1234, a: { name: 'é', x: null }, ok: true });
    expect(ndjsonValueBytes(`${line}\n${line}\n`)).toBe(3 + 4 + 2 + 4);
    expect(ndjsonValueBytes('')).toBeUndefined();
  });
});

describe('rowGroupRows', () => {
  it.each([
    // bytes, row bytes, rows
    [16 * MiB, 2048, 8192],
    [32 * MiB, 2048, 16384],
    [25.6 * MiB, 2048, 12288],
    [16 * MiB, 500, 32768],
    [1024 * MiB, 500, MAX_ROW_GROUP_ROWS],
    [1 * MiB, 2048, MIN_ROW_GROUP_ROWS],
    [16 * MiB, 0, MAX_ROW_GROUP_ROWS],
  ])('%d bytes of rows of %d bytes: %d rows, whole vectors', (bytes, rowBytes, rows) => {
    expect(rowGroupRows(bytes, rowBytes)).toBe(rows);
    expect(rows % 2048).toBe(0);
  });

  it('a smaller budget never gives larger row groups', () => {
    let last = Infinity;
    for (const mib of [4096, 1024, 640, 512, 384, 320, 300, 272]) {
      const split = splitBudget({ bytes: mib * MiB, source: 'setting', from: 'test' }, { concurrency: 4, maxBodyBytes: 64 * MiB });
      const rows = rowGroupRows(split.rowGroupBytes, DEFAULT_ROW_BYTES);
      expect(rows).toBeLessThanOrEqual(last);
      last = rows;
    }
  });
});

describe('mergeRows', () => {
  it.each([
    // row group rows, rows a merge aims at
    [8_192, 8_192 * MERGE_GROUPS],
    [12_288, 12_288 * MERGE_GROUPS],
    [16_384, 49_152],
    [24_576, 49_152],
    [40_960, 40_960],
    [57_344, 57_344],
    [MAX_ROW_GROUP_ROWS, MAX_ROW_GROUP_ROWS],
  ])('groups of %d rows: merges of %d, whole groups (long text several, short records one)', (groupRows, rows) => {
    expect(mergeRows(groupRows)).toBe(rows);
    expect(rows % groupRows).toBe(0);
    expect(rows).toBeLessThanOrEqual(Math.max(groupRows, MERGE_GROUPS_ROWS));
  });
});

/** Rows per row group of `sessions` in a DuckDB file, read by a separate DuckDB instance. */
async function rowGroups(path: string): Promise<number[]> {
  const inst = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const c = await inst.connect();
  try {
    const r = await c.runAndReadAll(
      `SELECT row_group_id, sum(count) AS n FROM pragma_storage_info('sessions') WHERE column_path = '[0]' GROUP BY 1 ORDER BY 1`,
    );
    return r.getRowObjectsJS().map((x) => Number(x.n));
  } finally {
    c.closeSync();
    inst.closeSync();
  }
}

function record(id: string, started: number, notes: string) {
  return { id, companyId: 'c1', started, ended: started + 60, duration: 60, agent: { id: 'a1', name: 'Ann', email: 'ann@example.com' }, externalFields: { notes } };
}

describe('a writer attaches its file with the row group size', () => {
  /** Commits n records with notes of noteBytes in one window, then merges them. */
  async function commitRecords(store: SessionStore, n: number, noteBytes: number): Promise<void> {
    const DAY = 1_767_225_600;
    await store.beginRunCounts();
    const records = Array.from({ length: n }, (_, i) => record(`s${String(i).padStart(6, '0')}`, DAY + i, 'x'.repeat(noteBytes)));
    const bytes_ = Buffer.from(records.map((r) => JSON.stringify(r)).join('\n') + '\n');
    await store.commitWindow({ account: '', window: { start: DAY, end: DAY + 86_400 }, ndjson: { bytes: bytes_, count: n, extractedAt: 1000 }, rejected: [], runId: 'r1' });
    await store.flush();
  }

  it('a new store sizes its groups from the first rows committed: short records get large groups, before any group is written', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-rowgroups-'));
    dirs.push(dir);
    const bytes = 4 * MiB;
    const store = await SessionStore.open({ dataDir: dir, format: 'duckdb', rowGroupBytes: bytes });
    // Nothing to measure yet: sized for long text.
    expect(store.rowGroupRows).toBe(rowGroupRows(bytes));
    // The values of a record: id 7, company 2, start and end 10 each, duration 2, agent 2 + 3 + 15, notes 20 bytes.
    const valueBytes = 7 + 2 + 10 + 10 + 2 + 2 + 3 + 15 + 20;
    const rows = rowGroupRows(bytes, valueBytes);
    expect(rows).toBe(57_344);
    const n = 2 * rows + 100;
    await commitRecords(store, n, 20);
    expect(store.rowGroupRows).toBe(rows);
    await store.close();
    const groups = await rowGroups(join(dir, 'sessions.duckdb'));
    expect(groups).toEqual([rows, rows, 100]);
    // Opened again, the store measures the rows it holds and keeps groups of that size.
    const again = await SessionStore.open({ dataDir: dir, format: 'duckdb', rowGroupBytes: bytes });
    expect(again.rowGroupRows).toBeGreaterThan(rowGroupRows(bytes));
    await again.close();
  }, 120_000);

  it('readers of the store running through its first commit (the re-attach) all answer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-rowgroups-'));
    dirs.push(dir);
    const store = await SessionStore.open({ dataDir: dir, format: 'duckdb', rowGroupBytes: 8 * MiB });
    const before = store.rowGroupRows;
    let stop = false;
    let reads = 0;
    // The state snapshot's transaction, the planner's reads on the main connection outside the write
    // queue and a connection of its own (verify's), in loops while the first commit attaches the file
    // again: none of them asks for anything (every connection of the store passes its gate: read-gate.ts).
    const other = await store.openConnection();
    const loops = [
      async () => {
        const conn = await store.readConnection();
        await conn.run('BEGIN TRANSACTION');
        await conn.run('SELECT count(*) FROM _coverage');
        await conn.run('COMMIT');
      },
      async () => {
        await store.coverage('');
        await store.lastRuns();
      },
      async () => {
        await other.run('SELECT count(*) FROM sessions');
      },
    ].map(async (read) => {
      while (!stop) {
        await read();
        reads++;
      }
    });
    await commitRecords(store, 5_000, 20);
    stop = true;
    await Promise.all(loops);
    other.closeSync();
    expect(store.rowGroupRows).toBeGreaterThan(before);
    expect(reads).toBeGreaterThan(0);
    await store.close();
  }, 120_000);

  it('a new store of long text keeps small groups', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-rowgroups-'));
    dirs.push(dir);
    const bytes = 32 * MiB;
    const store = await SessionStore.open({ dataDir: dir, format: 'duckdb', rowGroupBytes: bytes });
    await commitRecords(store, 20_000, 1_800);
    // About 2 KB a row: 32 MiB holds 16,384 of them at most.
    expect(store.rowGroupRows).toBeLessThanOrEqual(16_384);
    expect(store.rowGroupRows).toBeGreaterThanOrEqual(MIN_ROW_GROUP_ROWS);
    await store.close();
    const groups = await rowGroups(join(dir, 'sessions.duckdb'));
    expect(groups.reduce((a, b) => a + b, 0)).toBe(20_000);
    expect(Math.max(...groups)).toBeLessThanOrEqual(16_384);
  }, 120_000);

  it('long text merged several row groups at a time is still written in whole groups of the store\'s size', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-rowgroups-'));
    dirs.push(dir);
    const DAY = 1_767_225_600;
    const store = await SessionStore.open({ dataDir: dir, format: 'duckdb', rowGroupBytes: 16 * MiB });
    await store.beginRunCounts();
    const perWindow = 5_000;
    const windows = 9;
    for (let w = 0; w < windows; w++) {
      const records = Array.from({ length: perWindow }, (_, i) => record(`s${String(w * perWindow + i).padStart(6, '0')}`, DAY + w * perWindow + i, 'x'.repeat(1_800)));
      const bytes_ = Buffer.from(records.map((r) => JSON.stringify(r)).join('\n') + '\n');
      const start = DAY + w * perWindow;
      await store.commitWindow({ account: '', window: { start, end: start + perWindow }, ndjson: { bytes: bytes_, count: perWindow, extractedAt: 1000 }, rejected: [], runId: 'r1' });
    }
    await store.flush();
    const groupRows = store.rowGroupRows;
    // About 1.9 KB a row: 16 MiB holds 8,192 of them; a merge takes up to mergeRows of them.
    expect(groupRows).toBe(8_192);
    expect(mergeRows(groupRows)).toBeGreaterThan(groupRows);
    await store.close();
    const groups = await rowGroups(join(dir, 'sessions.duckdb'));
    expect(groups.reduce((a, b) => a + b, 0)).toBe(windows * perWindow);
    expect(Math.max(...groups)).toBeLessThanOrEqual(groupRows);
    expect(groups.slice(0, -1).every((n) => n === groupRows)).toBe(true);
  }, 120_000);

  it('a store written with DuckDB\'s 122,880-row groups keeps them and continues in groups of the budget', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-rowgroups-'));
    dirs.push(dir);
    const DAY = 1_767_225_600;
    const commit = async (store: SessionStore, from: number, n: number) => {
      await store.beginRunCounts();
      const records = Array.from({ length: n }, (_, i) => record(`s${String(from + i).padStart(7, '0')}`, DAY + from + i, 'x'.repeat(20)));
      const bytes_ = Buffer.from(records.map((r) => JSON.stringify(r)).join('\n') + '\n');
      await store.commitWindow({ account: '', window: { start: DAY + from, end: DAY + from + n }, ndjson: { bytes: bytes_, count: n, extractedAt: 1000 }, rejected: [], runId: `r${from}` });
      await store.flush();
    };
    const old = await SessionStore.open({ dataDir: dir, format: 'duckdb', rowGroupBytes: 1024 * MiB });
    expect(old.rowGroupRows).toBe(MAX_ROW_GROUP_ROWS);
    await commit(old, 0, 130_000);
    await old.close();
    expect(await rowGroups(join(dir, 'sessions.duckdb'))).toEqual([122_880, 7_120]);
    const store = await SessionStore.open({ dataDir: dir, format: 'duckdb', rowGroupBytes: 1 * MiB });
    expect(store.rowGroupRows).toBe(MIN_ROW_GROUP_ROWS);
    await commit(store, 130_000, 4 * MIN_ROW_GROUP_ROWS);
    await store.close();
    // The partly filled group is filled up to the new size, then whole groups follow: nothing rewritten, nothing larger.
    const groups = await rowGroups(join(dir, 'sessions.duckdb'));
    expect(groups.reduce((a, b) => a + b, 0)).toBe(130_000 + 4 * MIN_ROW_GROUP_ROWS);
    expect(groups[0]).toBe(122_880);
    expect(groups.slice(1).every((n) => n <= MIN_ROW_GROUP_ROWS)).toBe(true);
    expect(groups.slice(1, -1).every((n) => n === MIN_ROW_GROUP_ROWS)).toBe(true);
  }, 120_000);

  it('without a run budget a writer uses the default budget share', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-rowgroups-'));
    dirs.push(dir);
    const store = await SessionStore.open({ dataDir: dir, format: 'duckdb' });
    expect(store.rowGroupRows).toBe(rowGroupRows(DEFAULT_ROW_GROUP_BYTES));
    await store.close();
  });
});
