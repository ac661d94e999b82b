/**
 * Reads a data directory back independently of the writer (DuckDB read-only, Parquet with
 * hyparquet) and checks the invariants a crash must never break:
 *
 * - every covered window (`_coverage`) holds every emulator session started in it, value for value
 *   (the checkpoint never ran ahead of committed data);
 * - every Parquet file is complete (PAR1 at both ends, readable), and a partition not marked
 *   pending equals the committed rows of its date;
 * - after a completing run: the DuckDB table and the Parquet dataset equal the emulator's data
 *   exactly, nothing is pending, .tmp is empty and the lock is released.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Emulator } from '../../src/emulator/index.js';
import type { SessionRecord } from '../../src/schema/session-fields.js';
import { expectedRow, parquetRowsComparable, readParquetDataset, type ParquetPartition } from '../helpers/read-store.js';
import { byId, compareExact, rowDiff, type ComparableRow } from './harness.js';

export type Format = 'duckdb' | 'parquet' | 'both';

export interface StoreSnapshot {
  exists: boolean;
  coverage: Array<{ start: number; end: number }>;
  /**
   * Committed rows: the sessions table (format duckdb/both) with the rows committed to
   * `_pending_rows` but not merged yet on top (newest extracted_at wins); for format parquet, only
   * the pending rows (the rest is in the dataset).
   */
  rows: Array<Record<string, unknown>>;
  /** Rows of the sessions table alone (what a reader of the table sees now). */
  tableRows: Array<Record<string, unknown>>;
  /** Partitions whose Parquet file is older than the committed data. */
  pending: string[];
  parquet: ParquetPartition[];
  rejected: Array<Record<string, unknown>>;
  runs: Array<Record<string, unknown>>;
  backfillsOpen: number;
  /** Files listed as committed in _pending_files that are not on disk (committed data lost). */
  missingPendingFiles: string[];
}

const ROW_SELECT = `SELECT * EXCLUDE (started_at, ended_at, extracted_at),
  epoch(started_at)::BIGINT AS started_at, epoch(ended_at)::BIGINT AS ended_at, epoch(extracted_at) AS extracted_at`;

/** Everything a run left, read without the writer's code. */
export async function readStore(dataDir: string, format: Format): Promise<StoreSnapshot> {
  const dbPath = join(dataDir, format === 'parquet' ? 'state.duckdb' : 'sessions.duckdb');
  const snap: StoreSnapshot = { exists: false, coverage: [], rows: [], tableRows: [], pending: [], parquet: [], rejected: [], runs: [], backfillsOpen: 0, missingPendingFiles: [] };
  snap.parquet = await readParquetDataset(dataDir);
  if (!existsSync(dbPath)) return snap;
  snap.exists = true;
  const inst = await DuckDBInstance.create(dbPath, { access_mode: 'READ_ONLY' });
  const c = await inst.connect();
  const all = async (sql: string) =>
    (await c.runAndReadAll(sql)).getRowObjectsJS().map((r) => {
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r)) o[k] = typeof v === 'bigint' ? Number(v) : v;
      return o;
    });
  try {
    const tables = new Set((await all(`SELECT table_name FROM information_schema.tables`)).map((t) => String(t.table_name)));
    if (!tables.has('_coverage')) return snap; // killed before the schema was committed
    snap.coverage = (await all('SELECT start_s, end_s FROM _coverage ORDER BY start_s')).map((r) => ({
      start: Number(r.start_s),
      end: Number(r.end_s),
    }));
    const pendingRows = tables.has('_pending_rows')
      ? (await all(`${ROW_SELECT} FROM _pending_rows`)).map(({ partition: _p, ...r }) => r)
      : [];
    const pending = new Set<string>();
    // Committed windows whose records wait as newline-delimited JSON files under pending/.
    if (tables.has('_pending_files')) {
      for (const f of await all('SELECT file, extracted_at FROM _pending_files')) {
        let text: string;
        try {
          text = await readFile(join(dataDir, 'pending', String(f.file)), 'utf8');
        } catch {
          snap.missingPendingFiles.push(String(f.file));
          continue;
        }
        for (const line of text.split('\n')) {
          if (!line.trim()) continue;
          const rec = JSON.parse(line) as SessionRecord;
          pendingRows.push({ ...expectedRow(rec), extracted_at: Number(f.extracted_at) });
          pending.add(dateOf(rec.started));
        }
      }
    }
    if (tables.has('_pending_rows')) (await all('SELECT DISTINCT partition FROM _pending_rows')).forEach((r) => pending.add(String(r.partition)));
    if (tables.has('_parquet_pending')) (await all('SELECT partition FROM _parquet_pending')).forEach((r) => pending.add(String(r.partition)));
    if (format !== 'duckdb') snap.pending = [...pending].sort();
    if (tables.has('sessions')) snap.tableRows = await all(`${ROW_SELECT} FROM sessions`);
    snap.rows = newestById([...snap.tableRows, ...pendingRows]);
    snap.rejected = await all('SELECT * FROM rejected_sessions');
    snap.runs = await all('SELECT run_id, kind, outcome, error FROM _runs');
    snap.backfillsOpen = Number((await all('SELECT count(*) AS n FROM _backfills WHERE completed_at IS NULL'))[0]?.n ?? 0);
  } finally {
    c.closeSync();
    inst.closeSync();
  }
  return snap;
}

function newestById(rows: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const m = new Map<string, Record<string, unknown>>();
  for (const r of rows) {
    const id = String(r.session_id);
    const cur = m.get(id);
    if (!cur || Number(r.extracted_at) >= Number(cur.extracted_at)) m.set(id, r);
  }
  return [...m.values()];
}

function mergeIntervals(xs: Array<{ start: number; end: number }>): Array<{ start: number; end: number }> {
  const s = [...xs].sort((a, b) => a.start - b.start);
  const out: Array<{ start: number; end: number }> = [];
  for (const w of s) {
    const last = out[out.length - 1];
    if (last && w.start <= last.end) last.end = Math.max(last.end, w.end);
    else out.push({ ...w });
  }
  return out;
}

function dateOf(startedAt: unknown): string {
  return startedAt == null ? '__HIVE_DEFAULT_PARTITION__' : new Date(Number(startedAt) * 1000).toISOString().slice(0, 10);
}

/**
 * The invariants that must hold at any instant a run can be killed. Returns the problems found
 * and how many rows were compared with the emulator.
 */
export function checkCrashInvariants(snap: StoreSnapshot, format: Format, emu: Emulator): { problems: string[]; compared: number } {
  const problems: string[] = [];
  let compared = 0;
  if (snap.missingPendingFiles.length) problems.push(`committed files missing from pending/: ${snap.missingPendingFiles.slice(0, 3).join(', ')}`);
  // The data a reader would get: the table (or, for parquet, the dataset with pending rows on top).
  const parquetRows = parquetRowsComparable(snap.parquet);
  let data: Map<string, Record<string, unknown>>;
  if (format === 'parquet') {
    data = byId(parquetRows).map;
    for (const [id, r] of byId(snap.rows).map) data.set(id, r);
  } else {
    data = byId(snap.rows).map;
  }
  const quarantined = new Set(snap.rejected.map((r) => String(r.session_id)));
  for (const w of mergeIntervals(snap.coverage)) {
    for (const rec of emu.dataset.sessionsStartedIn(w.start, w.end)) {
      compared++;
      const got = data.get(rec.id);
      // With --on-invalid quarantine a rejected record is accounted for by its row in rejected_sessions.
      if (!got && quarantined.has(rec.id)) continue;
      if (!got) {
        problems.push(`coverage ${w.start}..${w.end} claims session ${rec.id} (started ${rec.started}) but it is not committed`);
        break;
      }
      const d = rowDiff(expectedRow(rec) as unknown as Record<string, unknown>, got);
      if (d) {
        problems.push(`covered session ${rec.id} differs: ${d}`);
        break;
      }
    }
  }
  if (format === 'both') {
    // A partition not marked pending must equal the committed rows of its date.
    const pending = new Set(snap.pending);
    const tableByDate = new Map<string, Array<Record<string, unknown>>>();
    for (const r of snap.rows) {
      const d = dateOf(r.started_at);
      (tableByDate.get(d) ?? tableByDate.set(d, []).get(d)!).push(r);
    }
    for (const p of snap.parquet) {
      const date = p.partition.replace(/^date=/, '');
      const rows = byId(parquetRowsComparable([p])).map;
      if (pending.has(date)) {
        for (const id of rows.keys()) {
          if (!data.has(id)) {
            problems.push(`Parquet partition ${p.partition} (pending) holds ${id}, which is not committed`);
            break;
          }
        }
        continue;
      }
      const table = byId(tableByDate.get(date) ?? []).map;
      if (rows.size !== table.size) {
        problems.push(`Parquet partition ${p.partition} is not pending but holds ${rows.size} rows, the table ${table.size}`);
        continue;
      }
      for (const [id, r] of table) {
        const got = rows.get(id);
        const { extracted_at: _x, ...want } = r;
        const d = got ? rowDiff(want, got) : 'missing';
        if (d) {
          problems.push(`Parquet partition ${p.partition} is not pending but ${id} differs from the table: ${d}`);
          break;
        }
      }
    }
    for (const date of tableByDate.keys()) {
      if (!pending.has(date) && !snap.parquet.some((p) => p.partition === `date=${date}`)) {
        problems.push(`partition ${date} has committed rows, no Parquet file and no pending mark`);
      }
    }
  }
  return { problems, compared };
}

/** After a completing run: the stored data equals the truth exactly, in every format written. */
export async function checkFinal(
  dataDir: string,
  format: Format,
  truth: Map<string, ComparableRow>,
  opts: { allowRejected?: boolean; onlyStartedIn?: { from: number; to: number } } = {},
): Promise<{ problems: string[]; compared: number; snap: StoreSnapshot }> {
  const snap = await readStore(dataDir, format);
  const within = (row: Record<string, unknown>) => {
    if (!opts.onlyStartedIn) return true;
    const t = row.started_at instanceof Date ? row.started_at.getTime() / 1000 : Number(row.started_at);
    return t >= opts.onlyStartedIn.from && t <= opts.onlyStartedIn.to;
  };
  const problems: string[] = [];
  let compared = 0;
  if (format !== 'parquet') {
    const r = compareExact('DuckDB table', truth, snap.tableRows.filter(within));
    problems.push(...r.problems);
    compared += r.compared;
  }
  if (format !== 'duckdb') {
    const rows = parquetRowsComparable(snap.parquet).filter(within);
    const r = compareExact('Parquet dataset', truth, rows);
    problems.push(...r.problems);
    compared += r.compared;
    for (const p of snap.parquet) {
      if (!/^date=(\d{4}-\d{2}-\d{2}|__HIVE_DEFAULT_PARTITION__)$/.test(p.partition) || !p.file.endsWith('/part-0.parquet')) {
        problems.push(`unexpected Parquet path ${p.file}`);
      }
      const date = p.partition.replace(/^date=/, '');
      const wrong = p.rows.find((row) => dateOf(row.started_at instanceof Date ? row.started_at.getTime() / 1000 : row.started_at) !== date);
      if (wrong) problems.push(`Parquet partition ${p.partition} holds session ${String(wrong.session_id)} of another date`);
    }
    if (snap.pending.length) problems.push(`partitions still pending after a completed run: ${snap.pending.join(', ')}`);
  }
  if (!opts.allowRejected && snap.rejected.length) problems.push(`${snap.rejected.length} rows in rejected_sessions`);
  const tmp = join(dataDir, '.tmp');
  if (existsSync(tmp) && (await readdir(tmp)).length) problems.push(`.tmp is not empty: ${(await readdir(tmp)).join(', ')}`);
  if (existsSync(join(dataDir, '.session-etl.lock'))) problems.push('the lock is still there after the run ended');
  return { problems, compared, snap };
}
