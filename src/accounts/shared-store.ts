/**
 * The accounts of one many-account run share one DuckDB instance (docs/accounts.md "One process,
 * many accounts"): each account's own file is attached to it while its run holds it. Starting and
 * tearing down an instance per account was most of a small account's cost (docs/benchmarks.md).
 * SESSION_ETL_SHARED_DUCKDB=0 gives each account an instance of its own, as a single-account run has.
 */
import { openSharedDuckDB } from '../store/duckdb.js';
import { sharedWriterSettings } from '../store/open-data-dir.js';

export async function withSharedStore<T>(concurrency: number, fn: () => Promise<T>): Promise<T> {
  if (process.env.SESSION_ETL_SHARED_DUCKDB === '0') return fn();
  const shared = await openSharedDuckDB(sharedWriterSettings(concurrency));
  try {
    return await fn();
  } finally {
    await shared.close();
  }
}
