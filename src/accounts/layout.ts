/**
 * Where a many-account data directory keeps things (docs/accounts.md):
 *   <data-dir>/sessions.duckdb (or state.duckdb)      the accounts' one store (`account` column), when not sharded
 *   <data-dir>/shards/I-of-N/sessions.duckdb          shard I of N's store, when sharded (store/layout.ts)
 *   <data-dir>/parquet/sessions/date=YYYY-MM-DD/part-0.parquet (part-I-of-N.parquet)   one dataset, rows carry `account`
 *   <data-dir>/all-accounts.duckdb                   a view over the whole dataset, for DuckDB users
 * and, before schema 3 (migrated by the first run: legacy.ts):
 *   <data-dir>/accounts/<name>/                      an account's own store
 *   <data-dir>/parquet/sessions/account=<name>/date=YYYY-MM-DD/part-0.parquet
 */
import { join } from 'node:path';

export const ACCOUNTS_DIR = 'accounts';
export const ALL_ACCOUNTS_DB = 'all-accounts.duckdb';

export function datasetRoot(root: string): string {
  return join(root, 'parquet', 'sessions');
}

/** The glob that reads every account's every day (hive_partitioning gives `date`; the rows carry `account`). */
export function allAccountsGlob(root: string): string {
  return join(datasetRoot(root), 'date=*', '*.parquet');
}

/** An account's own store directory in the layout before schema 3. */
export function legacyAccountDir(root: string, name: string): string {
  return join(root, ACCOUNTS_DIR, name);
}

/** An account's partitions in the layout before schema 3. */
export function legacyAccountParquetDir(root: string, name: string): string {
  return join(datasetRoot(root), `account=${name}`);
}
