/**
 * How many rows a row group holds: the unit DuckDB compresses at once outside its memory pool (and a
 * Parquet COPY builds in memory). Its cost grows with the rows' bytes, not memory_limit: the budget
 * gives it bytes (config/memory-budget.ts), the rows' measured size turns them into rows (issue 39).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { fileHead } from './durable-fs.js';
import { queryRows } from './duckdb.js';

/** DuckDB's own row group size, and our largest: larger groups buy readers nothing more. */
export const MAX_ROW_GROUP_ROWS = 122_880;

/** DuckDB's vector size: a row group is a whole number of vectors. */
export const VECTOR_ROWS = 2_048;

/** The smallest row group: below it, statistics prune less than a busy account's day, and dictionaries grow the file. */
export const MIN_ROW_GROUP_ROWS = 4 * VECTOR_ROWS;

/** A row's bytes before any are measured (table-sink.ts measures a new store's first commit): the long-text case. */
export const DEFAULT_ROW_BYTES = 2_048;

/** The rows of a row group: as many as `rowGroupBytes` holds of rows of `rowBytes`, whole vectors, within the bounds above. */
export function rowGroupRows(rowGroupBytes: number, rowBytes: number = DEFAULT_ROW_BYTES): number {
  const fit = Math.floor(rowGroupBytes / Math.max(1, rowBytes) / VECTOR_ROWS) * VECTOR_ROWS;
  return Math.min(MAX_ROW_GROUP_ROWS, Math.max(MIN_ROW_GROUP_ROWS, fit));
}

/**
 * Most row groups one merge appends. DuckDB compresses one group at a time however many a merge
 * appends, but each merge has a fixed cost: long text's groups one per merge cost 1.1–1.2× the CPU
 * (docs/benchmarks.md, "Throughput against the main issue 40 was filed on"). Bounded so that a
 * merge's own structures stay small beside a row group.
 */
export const MERGE_GROUPS = 4;

/**
 * Most rows a merge of several groups holds: 4 of long text's 12,288. Larger groups merge one at a
 * time: two 53,248-row groups a merge raised the 1 M short-record peak by 40 MiB for no CPU saved.
 */
export const MERGE_GROUPS_ROWS = MERGE_GROUPS * 12_288;

/** The rows one merge aims at: whole row groups of `rowGroupRows`, up to MERGE_GROUPS of them within MERGE_GROUPS_ROWS (at least one group). */
export function mergeRows(rowGroupRows: number): number {
  return rowGroupRows * Math.max(1, Math.min(MERGE_GROUPS, Math.floor(MERGE_GROUPS_ROWS / rowGroupRows)));
}

/** How many rows (the first) are sampled to measure a row's size. */
const SAMPLE_ROWS = 4_096;

/**
 * The average bytes of a stored session's values (each column as text): without the field names JSON
 * repeats (they made short records look three times their size). Undefined: no sessions table or rows.
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

/** The same measure of NDJSON records, over at most the first SAMPLE_ROWS lines of `text`. */
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

const SAMPLE_BYTES = 4 * 2 ** 20;

/** ndjsonValueBytes of the first megabytes of a record file. */
export async function ndjsonFileValueBytes(path: string): Promise<number | undefined> {
  return ndjsonValueBytes((await fileHead(path, SAMPLE_BYTES)).toString('utf8'));
}

/** The options of every Parquet COPY of ours: zstd, and row groups of the store's size (a COPY builds each in memory). */
export function parquetCopyOptions(rowGroupRows: number): string {
  return `FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rowGroupRows}`;
}
