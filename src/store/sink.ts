/**
 * Where committed rows go, one implementation per output format: `TableSink` (formats duckdb and
 * both: record files merged into the `sessions` table, and with both, its days rewritten to Parquet)
 * and `ParquetOnlySink` (format parquet: a commit loads the files into `_pending_rows`, where rows wait
 * until their partition's file is rewritten). Either way a committed window arrives as one record file. The store's facade and its commit queue talk to this interface only.
 */
import type { DuckDBConnection } from '@duckdb/node-api';

/** A committed window's records as a newline-delimited JSON file (every record already checked). */
export interface RecordFile {
  path: string;
  count: number;
  /** epoch seconds */
  extractedAt: number;
  /** The account whose window it is ('' in a single-account store). */
  account: string;
}

/**
 * Sessions new to the table or dataset / replacing a stored version whose content (any column but
 * extracted_at) differs / replacing one with the same content (re-read), by account ('' in a
 * single-account store).
 */
export type AccountCounts = Map<string, { inserted: number; updated: number; unchanged: number }>;

export interface MergeResult {
  counts: AccountCounts;
}

export interface FlushResult {
  partitions: string[];
  /** What the merges of this flush counted. */
  counts: AccountCounts;
}

/** Adds `more` into `into` (account by account); returns `into`. */
export function addCounts(into: AccountCounts, more: AccountCounts): AccountCounts {
  for (const [account, c] of more) {
    const have = into.get(account);
    if (have) {
      have.inserted += c.inserted;
      have.updated += c.updated;
      have.unchanged += c.unchanged;
    } else into.set(account, { ...c });
  }
  return into;
}

export interface Sink {
  /**
   * Whether a record file is itself the committed data (written under pending/ and fsynced before
   * the commit, kept until merged), or only a way to hand the records to DuckDB (written under .tmp/).
   */
  readonly keepsFiles: boolean;
  /** Inside a commit's transaction, on the main connection: takes the group's record files. */
  commitFiles(c: DuckDBConnection, files: readonly RecordFile[]): Promise<void>;
  /** Before the transaction that commits these files, no other write running (a new store sizes its row groups: table-sink.ts). */
  beforeCommit?(files: readonly RecordFile[]): Promise<void>;
  /** After a group of windows committed. */
  afterCommit(files: readonly RecordFile[]): Promise<void>;
  /** Partitions whose Parquet file is older than the committed data. */
  pendingPartitions(conn: DuckDBConnection): Promise<string[]>;
  /** Marks the start of a run for the new/updated counts. */
  beginRunCounts(): Promise<void>;
  /** A generation number for a mark in `_parquet_pending`, above every one given or stored before. */
  nextGen(c: DuckDBConnection): Promise<bigint>;
  /** Makes every committed row visible in its final form; also returns what background work did since the last flush. */
  flush(): Promise<FlushResult>;
  /** No background work starts after this. */
  stop(): void;
  /** Resolves when the background work given so far has ended. */
  idle(): Promise<void>;
  /** Closes the sink's own connections (after the store's last statement). */
  closeConnections(): void;
}
