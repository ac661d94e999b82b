/**
 * Where committed rows go, one implementation per format: `TableSink` (duckdb and both: record files
 * merged into `sessions`) and `ParquetOnlySink` (parquet: rows wait in `_pending_rows` for their day's rewrite).
 */
import type { DuckDBConnection } from '@duckdb/node-api';

/** A committed window's records as a newline-delimited JSON file (every record already checked). */
export interface RecordFile {
  path: string;
  count: number;
  /** epoch seconds */
  extractedAt: number;
  /** '' in a single-account store. */
  account: string;
}

/** Sessions new / replacing a version whose content (but extracted_at) differs / re-read unchanged, by account. */
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
  /** Whether a record file is the committed data (under pending/, fsynced, kept until merged), or only the way in (.tmp/). */
  readonly keepsFiles: boolean;
  /** Inside a commit's transaction, on the main connection: takes the group's record files. */
  commitFiles(c: DuckDBConnection, files: readonly RecordFile[]): Promise<void>;
  /** Before the transaction that commits these files, no other write running (a new store sizes its row groups: table-sink.ts). */
  beforeCommit?(files: readonly RecordFile[]): Promise<void>;
  /** After a group of windows committed. */
  afterCommit(files: readonly RecordFile[]): Promise<void>;
  /** Partitions whose Parquet file is older than the committed data. */
  pendingPartitions(conn: DuckDBConnection): Promise<string[]>;
  beginRunCounts?(): Promise<void>;
  /** A generation number for a mark in `_parquet_pending`, above every one given or stored before. */
  nextGen(c: DuckDBConnection): Promise<bigint>;
  /** Makes every committed row visible in its final form; also returns what background work did since the last flush. */
  flush(): Promise<FlushResult>;
  /** No background work starts after this. */
  stop?(): void;
  idle?(): Promise<void>;
  /** Closes the sink's own connections (after the store's last statement). */
  closeConnections?(): void;
}
