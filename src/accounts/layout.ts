/**
 * Where a many-account data directory keeps things (docs/accounts.md):
 *   <data-dir>/accounts/<name>/                      the account's DuckDB file, lock, state.json, .tmp, pending
 *   <data-dir>/parquet/sessions/account=<name>/date=YYYY-MM-DD/part-0.parquet   one dataset for all accounts
 *   <data-dir>/all-accounts.duckdb                   a view over the whole dataset, for DuckDB users
 */
import { join } from 'node:path';

export const ACCOUNTS_DIR = 'accounts';
export const ALL_ACCOUNTS_DB = 'all-accounts.duckdb';

export function accountDataDir(root: string, name: string): string {
  return join(root, ACCOUNTS_DIR, name);
}

export function datasetRoot(root: string): string {
  return join(root, 'parquet', 'sessions');
}

export function accountParquetDir(root: string, name: string): string {
  return join(datasetRoot(root), `account=${name}`);
}

/** The glob that reads every account's every partition (hive_partitioning gives `account` and `date`). */
export function allAccountsGlob(root: string): string {
  return join(datasetRoot(root), 'account=*', 'date=*', '*.parquet');
}
