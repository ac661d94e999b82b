/** Where a many-account data directory keeps things, now and before schema 3 (docs/accounts.md "Layout"). */
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
