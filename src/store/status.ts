/** What `session-etl status` reports, read from the data directory without writing anything. */
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointOf, holes } from '../time/intervals.js';
import { isoOf } from '../time/windows.js';
import { DataDirError } from './errors.js';
import { readHolder, type LockHolder } from './lock.js';
import { layoutOf, type OutputFormat } from './layout.js';
import { SessionStore } from './session-store.js';
import { queryRows } from './duckdb.js';

export interface StoreStatus {
  dataDir: string;
  format: OutputFormat;
  checkpoint: string | null;
  /** now - checkpoint, seconds. */
  lagSeconds: number | null;
  coverage: Array<{ from: string; to: string }>;
  coverageHoles: Array<{ from: string; to: string }>;
  rows: number | null;
  partitions: number;
  pendingPartitions: string[];
  /** Committed windows' records not merged into `sessions` yet (merged by the next run). */
  pendingRows: number;
  rejected: number;
  bytes: { duckdb: number; parquet: number; total: number };
  lastRuns: Array<Record<string, unknown>>;
  runningNow: LockHolder | null;
}

export async function readStatus(dataDir: string, nowMs = Date.now(), runs = 10): Promise<StoreStatus> {
  const format: OutputFormat = existsSync(layoutOf(dataDir, 'both').dbPath)
    ? (existsSync(layoutOf(dataDir, 'both').parquetDir) ? 'both' : 'duckdb')
    : existsSync(layoutOf(dataDir, 'parquet').dbPath)
      ? 'parquet'
      : (() => {
          throw new DataDirError(`no session-etl data in ${dataDir}: run a backfill or an export first`);
        })();
  const layout = layoutOf(dataDir, format);
  const runningNow = (await readHolder(layout.lockPath)) ?? null;
  const store = await SessionStore.open({ dataDir, format, readOnly: true });
  try {
    const coverage = await store.coverage();
    const cp = checkpointOf(coverage);
    const rows =
      format === 'parquet'
        ? null
        : Number((await queryRows<{ n: bigint }>(store.conn, 'SELECT count(*) AS n FROM sessions'))[0]?.n ?? 0);
    const rejected = Number((await queryRows<{ n: bigint }>(store.conn, 'SELECT count(*) AS n FROM rejected_sessions'))[0]?.n ?? 0);
    const lastRuns = (await store.lastRuns(runs)).map((r) => {
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r)) o[k] = typeof v === 'bigint' ? Number(v) : v instanceof Date ? v.toISOString() : v;
      return o;
    });
    const pendingPartitions = await store.pendingPartitions();
    const pendingRows = Number(
      (await queryRows<{ n: bigint | number | null }>(store.conn, 'SELECT coalesce(sum(rows), 0) AS n FROM _pending_files').catch(() => []))[0]?.n ?? 0,
    );
    const { count: partitions, bytes: parquetBytes } = await datasetSize(layout.parquetDir);
    const duckdbBytes = await sizeOf(layout.dbPath) + (await sizeOf(`${layout.dbPath}.wal`));
    return {
      dataDir,
      format,
      checkpoint: cp !== undefined ? isoOf(cp) : null,
      lagSeconds: cp !== undefined ? Math.round(nowMs / 1000 - cp) : null,
      coverage: coverage.map((w) => ({ from: isoOf(w.start), to: isoOf(w.end) })),
      coverageHoles: holes(coverage).map((h) => ({ from: isoOf(h.start), to: isoOf(h.end) })),
      rows,
      partitions,
      pendingPartitions,
      pendingRows,
      rejected,
      bytes: { duckdb: duckdbBytes, parquet: parquetBytes, total: duckdbBytes + parquetBytes },
      lastRuns,
      runningNow,
    };
  } finally {
    await store.close();
  }
}

async function sizeOf(p: string): Promise<number> {
  try {
    return (await stat(p)).size;
  } catch {
    return 0;
  }
}

async function datasetSize(root: string): Promise<{ count: number; bytes: number }> {
  let count = 0;
  let bytes = 0;
  let dirs: string[] = [];
  try {
    dirs = await readdir(root);
  } catch {
    return { count, bytes };
  }
  for (const d of dirs) {
    for (const f of await readdir(join(root, d)).catch(() => [] as string[])) {
      if (!f.endsWith('.parquet')) continue;
      count++;
      bytes += await sizeOf(join(root, d, f));
    }
  }
  return { count, bytes };
}
