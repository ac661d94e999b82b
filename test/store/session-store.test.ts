/**
 * The store on its own, against a real DuckDB file in a temp directory (no emulator, no pipeline):
 * windows committed with their data, merged to one row per session (newest version wins, counted as
 * new or updated), Parquet partitions read back with an independent reader, coverage, the run log,
 * and a failure of background work reported when it happens.
 */
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SessionStore, type FlushResult } from '../../src/store/session-store.js';
import type { OutputFormat } from '../../src/store/layout.js';
import { captureLogger } from '../helpers/capture.js';
import { parquetRowsComparable, readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const DAY1 = 1767225600; // 2026-01-01T00:00:00Z
const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-store-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function record(id: string, started: number, notes: string) {
  return { id, companyId: 'c1', started, ended: started + 60, duration: 60, agent: { id: 'a1', name: 'Ann', email: 'ann@example.com' }, externalFields: { notes } };
}
function ndjson(records: object[], extractedAt: number) {
  return { bytes: Buffer.from(records.map((r) => JSON.stringify(r)).join('\n') + '\n'), count: records.length, extractedAt };
}

/** What a flush counted for the single account of these stores. */
const inserted = (r: FlushResult) => r.counts.get('')?.inserted ?? 0;
const updated = (r: FlushResult) => r.counts.get('')?.updated ?? 0;

async function open(dataDir: string, format: OutputFormat, logger = captureLogger()) {
  return SessionStore.open({ dataDir, format, logger });
}

/**
 * A store whose background merges always wait for a whole row group: a merge takes committed rows
 * early only when they come slowly (4 s without a row group's worth, as a loaded machine's commits
 * of 60,000 sessions can), and these tests are about what a merge of whole row groups does.
 */
async function openWaitingForRowGroups(dataDir: string) {
  // A budget share that holds DuckDB's own 122,880-row groups of these short rows (row-groups.test.ts tests smaller ones).
  return SessionStore.open({ dataDir, format: 'duckdb', logger: captureLogger(), alignedWaitMs: 3_600_000, rowGroupBytes: 1024 * 2 ** 20 });
}

describe.each<OutputFormat>(['duckdb', 'both', 'parquet'])('SessionStore, format %s', (format) => {
  it('commits windows with their coverage, merges to one row per session, and counts new and updated', async () => {
    const dir = await tempDir();
    let store = await open(dir, format);
    await store.beginRunCounts();
    await store.commitWindow({ account: '', window: { start: DAY1, end: DAY1 + D }, ndjson: ndjson([record('s1', DAY1 + 10, 'v1'), record('s2', DAY1 + 20, 'x')], 1000), rejected: [], runId: 'r1' });
    await store.commitWindow({ account: '', window: { start: DAY1 + D, end: DAY1 + 2 * D }, ndjson: ndjson([record('s3', DAY1 + D + 5, 'y')], 1000), rejected: [], runId: 'r1' });
    expect(await store.coverage('')).toEqual([{ start: DAY1, end: DAY1 + 2 * D }]);
    const first = await store.flush();
    expect(inserted(first)).toBe(3);
    expect(updated(first)).toBe(0);
    await store.close();

    // A later run brings a newer version of s1 and an older one of s2: s1 is updated, s2 kept.
    store = await open(dir, format);
    await store.beginRunCounts();
    await store.commitWindow({ account: '', window: { start: DAY1, end: DAY1 + D }, ndjson: ndjson([record('s1', DAY1 + 10, 'v2')], 2000), rejected: [], runId: 'r2' });
    await store.commitWindow({ account: '', window: { start: DAY1, end: DAY1 + D }, ndjson: ndjson([record('s2', DAY1 + 20, 'old')], 500), rejected: [], runId: 'r2' });
    const second = await store.flush();
    expect(inserted(second)).toBe(0);
    expect(await store.pendingPartitions()).toEqual([]);
    await store.close();

    const expected = [
      { session_id: 's1', external_notes: 'v2', extracted_at: 2000 },
      { session_id: 's2', external_notes: 'x', extracted_at: 1000 },
      { session_id: 's3', external_notes: 'y', extracted_at: 1000 },
    ];
    if (format !== 'parquet') {
      const rows = await readDuckDbSessions(dir);
      expect(rows.map((r) => ({ session_id: r.session_id, external_notes: r.external_notes, extracted_at: r.extracted_at }))).toEqual(expected);
    }
    if (format !== 'duckdb') {
      const parts = await readParquetDataset(dir);
      expect(parts.map((p) => p.partition)).toEqual(['date=2026-01-01', 'date=2026-01-02']);
      const rows = parquetRowsComparable(parts);
      expect(rows.map((r) => ({ session_id: r.session_id, external_notes: r.external_notes, extracted_at: r.extracted_at }))).toEqual(expected);
    }
  });

  it('keeps the run log and the backfills begun, across a reopen', async () => {
    const dir = await tempDir();
    let store = await open(dir, format);
    const range = { start: DAY1, end: DAY1 + 3 * D };
    await store.beginBackfill('', range, 'r1');
    await store.recordRun({
      run_id: 'r1', account: '', kind: 'backfill', range_from: range.start, range_to: range.end, started_at: DAY1 + 5 * D, ended_at: null,
      outcome: 'running', windows: 3, sessions_written: 0, sessions_new: null, sessions_updated: null, rejected: 0, requests: 0,
      retries: 0, rate_limited: 0, bisections: 0, partitions_written: 0, error: null,
    });
    await store.close();
    store = await open(dir, format);
    expect(await store.openBackfill('', range)).toBeDefined();
    await store.completeBackfill('', range);
    expect(await store.openBackfill('', range)).toBeUndefined();
    const runs = await store.lastRuns();
    expect(runs.map((r) => [r.run_id, r.outcome, Number(r.windows)])).toEqual([['r1', 'running', 3]]);
    await store.close();
  });
});

describe('SessionStore background work', () => {
  it('a background merge appends whole row groups: it cuts a pending file in two, and every row lands once', async () => {
    const dir = await tempDir();
    const store = await openWaitingForRowGroups(dir);
    await store.beginRunCounts();
    // Three windows of 60,000 sessions each: 180,000 rows, and
    // DuckDB's row group holds 122,880, so the first merge takes two files and 2,880 rows of the third.
    const windows = [0, 1, 2].map((w) => {
      const start = DAY1 + w * D;
      return { window: { start, end: start + D }, records: Array.from({ length: 60_000 }, (_, i) => record(`w${w}-${String(i).padStart(5, '0')}`, start + i, `note ${w}/${i} "q" \\ é`)) };
    });
    for (const w of windows) await store.commitWindow({ account: '', window: w.window, ndjson: ndjson(w.records, 1000), rejected: [], runId: 'r1' });
    const pendingDir = join(dir, 'pending');
    // The rest of the cut file waits in a file of its own, named after its window.
    await expect.poll(async () => (await readdir(pendingDir)).length, { timeout: 20_000, interval: 20 }).toBe(1);
    const [tail] = await readdir(pendingDir);
    expect(tail).toMatch(new RegExp(`^rows-0*${DAY1 + 2 * D}-`));
    const lines = (await readFile(join(pendingDir, tail!), 'utf8')).split('\n').filter(Boolean);
    expect(lines.length).toBe(60_000 - 2_880);
    expect(JSON.parse(lines[0]!).id).toBe('w2-02880');
    const conn = await store.readConnection();
    expect(Number((await conn.runAndReadAll('SELECT count(*) FROM sessions')).getRows()[0]![0])).toBe(122_880);
    const flushed = await store.flush();
    expect(inserted(flushed)).toBe(180_000);
    const stored = (await conn.runAndReadAll('SELECT session_id, external_notes FROM sessions ORDER BY session_id')).getRows();
    await store.close();
    const expected = windows.flatMap((w) => w.records).sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(stored.length).toBe(expected.length);
    expect(stored.every((r, i) => r[0] === expected[i]!.id && r[1] === expected[i]!.externalFields.notes)).toBe(true);
    expect(await readdir(pendingDir).catch(() => [])).toEqual([]);
  }, 120_000);

  it('a background merge leaves out the older copy of a session two windows returned, and still writes whole row groups straight to the file', async () => {
    const dir = await tempDir();
    const store = await openWaitingForRowGroups(dir);
    await store.beginRunCounts();
    // As the vendor's closed windows do, the second window returns again the 40 sessions that
    // started on the boundary, fetched later (a newer extracted_at: that version wins).
    const boundary = DAY1 + D;
    const w0 = Array.from({ length: 60_000 }, (_, i) => record(`w0-${String(i).padStart(5, '0')}`, i < 59_960 ? DAY1 + i : boundary, `first ${i}`));
    const again = w0.slice(59_960).map((r) => ({ ...r, externalFields: { notes: `second ${r.id}` } }));
    const w1 = [...again, ...Array.from({ length: 60_000 }, (_, i) => record(`w1-${String(i).padStart(5, '0')}`, boundary + i, `first ${i}`))];
    const w2 = Array.from({ length: 60_000 }, (_, i) => record(`w2-${String(i).padStart(5, '0')}`, boundary + D + i, `first ${i}`));
    const windows = [
      { window: { start: DAY1, end: boundary }, records: w0, extractedAt: 1000 },
      { window: { start: boundary, end: boundary + D }, records: w1, extractedAt: 1001 },
      { window: { start: boundary + D, end: boundary + 2 * D }, records: w2, extractedAt: 1002 },
    ];
    for (const w of windows) await store.commitWindow({ account: '', window: w.window, ndjson: ndjson(w.records, w.extractedAt), rejected: [], runId: 'r1' });
    const pendingDir = join(dir, 'pending');
    await expect.poll(async () => (await readdir(pendingDir)).length, { timeout: 20_000, interval: 20 }).toBe(1);
    const conn = await store.readConnection();
    // One whole row group: 60,000 + 60,000 sessions of the first two windows, 2,880 of the third.
    expect(Number((await conn.runAndReadAll('SELECT count(*) FROM sessions')).getRows()[0]![0])).toBe(122_880);
    const [tail] = await readdir(pendingDir);
    expect(JSON.parse((await readFile(join(pendingDir, tail!), 'utf8')).split('\n')[0]!).id).toBe('w2-02880');
    // DuckDB wrote the row group to the file: the log holds the commits, not the rows (deleting
    // rows of its own append made DuckDB log every row of the merge, ~20 MB here).
    expect((await stat(join(dir, 'sessions.duckdb.wal'))).size).toBeLessThan(2 * 2 ** 20);
    const flushed = await store.flush();
    expect(inserted(flushed)).toBe(180_000);
    expect(updated(flushed)).toBe(0);
    const stored = (await conn.runAndReadAll('SELECT session_id, external_notes FROM sessions ORDER BY session_id')).getRows();
    await store.close();
    const expected = new Map([...w0, ...w2, ...w1].map((r) => [r.id, r.externalFields.notes]));
    expect(stored.length).toBe(180_000);
    expect(stored.every((r) => expected.get(r[0] as string) === r[1])).toBe(true);
    expect(stored.filter((r) => String(r[1]).startsWith('second ')).length).toBe(40);
  }, 120_000);

  // Each merge reads the next slice's session ids while its statements run (merge.ts, prefetchIds);
  // here a few files' ids are read ahead (a 1 M backfill reads ~48 files ahead at each merge).
  it('merges slice after slice with ids read ahead: every session once, the newest version of each boundary session', async () => {
    const dir = await tempDir();
    const store = await open(dir, 'both');
    await store.beginRunCounts();
    const PER = 15_000;
    const windows = Array.from({ length: 20 }, (_, w) => {
      const start = DAY1 + w * D;
      const own = Array.from({ length: PER }, (_, i) => record(`w${w}-${String(i).padStart(5, '0')}`, i < PER - 30 ? start + i : start + D, `first ${w}/${i}`));
      return { window: { start, end: start + D }, own, extractedAt: 1000 + w };
    });
    // Closed windows: the next window returns again the 30 sessions that start on its start, fetched later.
    for (const [w, x] of windows.entries()) {
      const again = w > 0 ? windows[w - 1]!.own.slice(PER - 30).map((r) => ({ ...r, externalFields: { notes: `again ${r.id}` } })) : [];
      await store.commitWindow({ account: '', window: x.window, ndjson: ndjson([...again, ...x.own], x.extractedAt), rejected: [], runId: 'r1' });
    }
    const flushed = await store.flush();
    const total = 20 * PER;
    expect(inserted(flushed)).toBe(total);
    const conn = await store.readConnection();
    const stored = (await conn.runAndReadAll('SELECT session_id, external_notes FROM sessions')).getRows();
    await store.close();
    const newest = new Map(windows.flatMap((x) => x.own.map((r) => [r.id, r.externalFields.notes] as const)));
    for (const x of windows.slice(0, -1)) for (const r of x.own.slice(PER - 30)) newest.set(r.id, `again ${r.id}`);
    expect(stored.length).toBe(total);
    expect(new Set(stored.map((r) => r[0])).size).toBe(total);
    expect(stored.every((r) => newest.get(r[0] as string) === r[1])).toBe(true);
    expect(stored.filter((r) => String(r[1]).startsWith('again ')).length).toBe(19 * 30);
    // The Parquet dataset (read by an independent reader) holds the same rows.
    const pq = parquetRowsComparable(await readParquetDataset(dir));
    expect(pq.length).toBe(total);
    expect(pq.filter((r) => String(r.external_notes).startsWith('again ')).length).toBe(19 * 30);
  }, 180_000);

  it('reports a failed background merge when it happens, and the closing flush fails naming it', async () => {
    const dir = await tempDir();
    const logger = captureLogger();
    const store = await open(dir, 'duckdb', logger);
    // A committed record file DuckDB cannot read with the contract's types (the scanner would have
    // refused it; here it stands for a file damaged on disk after its commit).
    await store.commitWindow({
      account: '',
      window: { start: DAY1, end: DAY1 + D },
      ndjson: ndjson([{ ...record('s1', DAY1 + 10, 'v1'), agentGroupId: 'not a number' }], 1000),
      rejected: [],
      runId: 'r1',
    });
    await expect.poll(() => logger.lines.some((l) => l.includes('background merge or Parquet rewrite failed')), { timeout: 5000 }).toBe(true);
    await expect(store.flush()).rejects.toThrow(/merging committed rows into the sessions table failed/);
    await store.close();
  });
});
