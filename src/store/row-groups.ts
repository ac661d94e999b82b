/**
 * How many rows a row group holds: the unit DuckDB compresses at once, outside its memory pool, when
 * a merge commits or a checkpoint writes (and the unit a Parquet COPY builds in memory). Its cost
 * grows with the bytes of the rows, not with DuckDB's memory_limit (issue 39, docs/configuration.md
 * "Memory and threads"): the memory budget gives it a share in bytes (config/memory-budget.ts
 * `rowGroupBytes`), and the rows' measured size turns that into rows.
 */
import { open } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from './duckdb.js';

/** DuckDB's own row group size, and our largest: larger groups buy readers nothing more. */
export const MAX_ROW_GROUP_ROWS = 122_880;

/** DuckDB's vector size: a row group is a whole number of vectors. */
export const VECTOR_ROWS = 2_048;

/**
 * The smallest row group: below this, a group's statistics prune less than a day's worth of
 * sessions of a busy account, and the file grows (each group has its own dictionaries).
 */
export const MIN_ROW_GROUP_ROWS = 4 * VECTOR_ROWS;

/**
 * A row's size, bytes, before a store holds any rows: the long-text case (notes of 1–2 KB and the
 * other fields), so that nothing is written in larger groups before the first rows are measured
 * (a new store measures them at its first commit: table-sink.ts).
 */
export const DEFAULT_ROW_BYTES = 2_048;

/** The rows of a row group: as many as `rowGroupBytes` holds of rows of `rowBytes`, whole vectors, within the bounds above. */
export function rowGroupRows(rowGroupBytes: number, rowBytes: number = DEFAULT_ROW_BYTES): number {
  const fit = Math.floor(rowGroupBytes / Math.max(1, rowBytes) / VECTOR_ROWS) * VECTOR_ROWS;
  return Math.min(MAX_ROW_GROUP_ROWS, Math.max(MIN_ROW_GROUP_ROWS, fit));
}

/**
 * Most row groups one merge appends (store/merge.ts). DuckDB compresses and writes a transaction's
 * appended rows one row group at a time, as each fills, so what it compresses at once stays one
 * group however many a merge appends; but each merge pays a fixed cost (a scan of the table's ids
 * for the versions it replaces, its statements, its COMMIT): long text's groups of 8,192–12,288
 * rows, one per merge, cost 1.1–1.2× the CPU of merges of 122,880 (docs/benchmarks.md, "Throughput
 * against the main issue 40 was filed on"). Bounded so that a merge's own structures (the ids it
 * compares, its temporary tables) stay small beside a row group.
 */
export const MERGE_GROUPS = 4;

/**
 * Most rows a merge of several groups holds: 4 groups of long text's 12,288 rows (measured). Larger
 * groups (short records: 40,960 rows and more) merge one at a time, as before: two 53,248-row groups
 * a merge raised the 1 M short-record peak by 40 MiB and saved no CPU that the host could show.
 */
export const MERGE_GROUPS_ROWS = MERGE_GROUPS * 12_288;

/** The rows one merge aims at: whole row groups of `rowGroupRows`, up to MERGE_GROUPS of them within MERGE_GROUPS_ROWS (at least one group). */
export function mergeRows(rowGroupRows: number): number {
  return rowGroupRows * Math.max(1, Math.min(MERGE_GROUPS, Math.floor(MERGE_GROUPS_ROWS / rowGroupRows)));
}

/** How many rows are sampled to measure a row's size (the first ones: one read of at most two row groups). */
const SAMPLE_ROWS = 4_096;

/**
 * The average bytes of a stored session's values (each column as text; NULL none): what DuckDB's
 * vectors hold of it, without the field names a JSON text repeats on every row (those made short
 * records look three times their size, and their row groups a third of what the share holds).
 * Undefined when the store holds no sessions table or no rows yet.
 */
export async function measureRowBytes(conn: DuckDBConnection): Promise<number | undefined> {
  const cols = await queryRows<{ c: string }>(
    conn,
    "SELECT column_name AS c FROM duckdb_columns() WHERE table_name = 'sessions' AND database_name = current_database() AND schema_name = 'main' ORDER BY column_index",
  );
  if (cols.length === 0) return undefined;
  const sum = cols.map((x) => `coalesce(strlen(CAST("${x.c.replace(/"/g, '""')}" AS VARCHAR)), 0)`).join(' + ');
  const r = await queryRows<{ b: number | null }>(conn, `SELECT avg(${sum}) AS b FROM (SELECT * FROM sessions LIMIT ${SAMPLE_ROWS}) s`);
  const b = r[0]?.b;
  return b === null || b === undefined ? undefined : Math.ceil(Number(b));
}

/**
 * The same measure of NDJSON records (a new store's first window: table-sink.ts): the bytes of
 * their values, field names left out, over at most the first SAMPLE_ROWS lines of `text`.
 */
export function ndjsonValueBytes(text: string): number | undefined {
  let rows = 0;
  let bytes = 0;
  const add = (v: unknown): void => {
    if (v === null || v === undefined) return;
    if (typeof v === 'string') bytes += Buffer.byteLength(v);
    else if (typeof v === 'object') for (const x of Object.values(v as Record<string, unknown>)) add(x);
    else bytes += String(v).length;
  };
  for (const line of text.split('\n')) {
    if (rows >= SAMPLE_ROWS) break;
    if (!line.trim()) continue;
    try {
      add(JSON.parse(line));
      rows++;
    } catch {
      // the last line of a cut sample
    }
  }
  return rows === 0 ? undefined : Math.ceil(bytes / rows);
}

/** How much of a record file is read to measure its rows. */
const SAMPLE_BYTES = 4 * 2 ** 20;

/** ndjsonValueBytes of the first megabytes of a record file (a new table store's first window: table-sink.ts). */
export async function ndjsonFileValueBytes(path: string): Promise<number | undefined> {
  const f = await open(path, 'r');
  try {
    const buf = Buffer.alloc(SAMPLE_BYTES);
    const { bytesRead } = await f.read(buf, 0, SAMPLE_BYTES, 0);
    return ndjsonValueBytes(buf.subarray(0, bytesRead).toString('utf8'));
  } finally {
    await f.close();
  }
}

/** The options of every Parquet COPY of ours: zstd, and row groups of the store's size (a COPY builds each in memory). */
export function parquetCopyOptions(rowGroupRows: number): string {
  return `FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rowGroupRows}`;
}
