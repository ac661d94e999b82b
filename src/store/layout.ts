import { join } from 'node:path';

export type OutputFormat = 'duckdb' | 'parquet' | 'both';

/** Where everything lives under the data directory. */
export interface StoreLayout {
  dataDir: string;
  /** The DuckDB file that holds state (and, unless format is parquet, the sessions table). */
  dbPath: string;
  /** Root of the Hive-partitioned dataset: parquet/sessions/date=YYYY-MM-DD/part-0.parquet */
  parquetDir: string;
  /** Temporary files, on the same file system so that renames are atomic; never under parquetDir. */
  tmpDir: string;
  /**
   * Committed windows' records as newline-delimited JSON, waiting to be merged into the sessions
   * table (formats duckdb and both); listed in the _pending_files table. Removed when empty.
   */
  pendingDir: string;
  /** The inter-process lock file. */
  lockPath: string;
}

export function layoutOf(dataDir: string, format: OutputFormat): StoreLayout {
  return {
    dataDir,
    dbPath: join(dataDir, format === 'parquet' ? 'state.duckdb' : 'sessions.duckdb'),
    parquetDir: join(dataDir, 'parquet', 'sessions'),
    tmpDir: join(dataDir, '.tmp'),
    pendingDir: join(dataDir, 'pending'),
    lockPath: join(dataDir, '.session-etl.lock'),
  };
}

/** Name of the partition holding sessions without a start time (Hive's default partition: read back as NULL). */
export const NULL_PARTITION = '__HIVE_DEFAULT_PARTITION__';
export const PARTITION_FILE = 'part-0.parquet';

export function partitionDir(parquetDir: string, partition: string): string {
  return join(parquetDir, `date=${partition}`);
}
