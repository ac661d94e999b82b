/**
 * A store's volume anomalies by account: its sessions counted per UTC day (one GROUP BY over the table,
 * or the dataset files' footers for format parquet), judged by volume-anomalies.ts.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { readAllCoverage } from './coverage.js';
import { queryRows, sqlString } from './duckdb.js';
import type { OutputFormat, StoreLayout } from './layout.js';
import type { StoreShape } from './shape.js';
import { readConfirmedDays } from './verify-log.js';
import { findVolumeAnomalies, type VolumeAnomaly, type VolumeRule } from './volume-anomalies.js';

/** What of a store the counts need (a SessionStore is one). */
interface CountedStore {
  format: OutputFormat;
  shape: StoreShape;
  layout: StoreLayout;
}

/** Stored sessions per account ('' in a single-account store) and UTC day; `only`: that account's alone. */
export async function readDayCounts(conn: DuckDBConnection, store: CountedStore, only?: string): Promise<Map<string, Map<string, number>>> {
  const account = store.shape.account();
  const own = only !== undefined ? ` AND ${account} = ${sqlString(only)}` : '';
  const sql =
    store.format === 'parquet'
      ? `SELECT ${account} AS a, CAST("date" AS VARCHAR) AS d, count(*) AS n
         FROM read_parquet(${sqlString(join(store.layout.parquetDir, 'date=*', store.layout.partitionFile))}, hive_partitioning = true)
         WHERE "date" IS NOT NULL${own} GROUP BY ALL`
      : `SELECT ${account} AS a, strftime(started_at, '%Y-%m-%d') AS d, count(*) AS n FROM sessions WHERE started_at IS NOT NULL${own} GROUP BY ALL`;
  // No day file here (none yet, or a bucket's): looked up first, as a failed read would abort the caller's transaction.
  if (store.format === 'parquet' && !(await hasDayFile(store.layout.parquetDir, store.layout.partitionFile))) return new Map();
  const rows = await queryRows<{ a: string; d: string; n: bigint | number }>(conn, sql);
  const out = new Map<string, Map<string, number>>();
  for (const r of rows) {
    const m = out.get(r.a) ?? out.set(r.a, new Map()).get(r.a)!;
    m.set(r.d, Number(r.n));
  }
  return out;
}

/** Whether a dataset directory holds a day file to read: a read of none fails. */
export async function hasDayFile(dir: string, file: string): Promise<boolean> {
  return (await readdir(dir).catch(() => [] as string[])).some((d) => d.startsWith('date=') && existsSync(join(dir, d, file)));
}

/** Each account's volume anomalies (every account that has coverage; none when the rule is off). */
export async function readVolumeAnomalies(conn: DuckDBConnection, store: CountedStore, rule: VolumeRule): Promise<Map<string, VolumeAnomaly[]>> {
  const out = new Map<string, VolumeAnomaly[]>();
  if (!(rule.threshold > 0)) return out;
  const coverage = await readAllCoverage(conn);
  if (coverage.size === 0) return out;
  const counts = await readDayCounts(conn, store);
  const confirmed = await readConfirmedDays(conn);
  for (const [account, windows] of coverage) {
    out.set(account, findVolumeAnomalies(counts.get(account) ?? new Map(), windows, rule, confirmed.get(account)));
  }
  return out;
}
