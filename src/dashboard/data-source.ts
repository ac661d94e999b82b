/**
 * Where the dashboard reads a data directory, and the one module that reads it: the state snapshot
 * (state.json) a run publishes after each commit and at its end, the lock's holder file (to tell a
 * live run from a dead one), and the committed Parquet dataset through an in-memory DuckDB. It never
 * opens the DuckDB file of the store (DuckDB lets one process open a file a writer wants, so even a
 * read-only open would make a run fail to start) and never takes the writer lock.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { openDb, type Db } from '../store/duckdb.js';
import { holderState, readHolder, type LockHolder } from '../store/lock.js';
import { layoutOf } from '../store/layout.js';
import { readStateSnapshot, type StateSnapshot } from '../store/state-snapshot.js';

/**
 * The two places the dashboard reads: the directory holding state.json and the lock (the data
 * directory, or the store directory of a shard), and the root of the Hive-partitioned Parquet
 * dataset; with `account`, that account of a many-account store (its state, and its rows of the dataset).
 */
export interface DashboardSource {
  stateDir: string;
  parquetRoot: string;
  account?: string;
}

export function sourceOfDataDir(dataDir: string): DashboardSource {
  return { stateDir: dataDir, parquetRoot: layoutOf(dataDir, 'both').parquetDir };
}

/** What the state directory says now: the snapshot (null when no run has written one) and the live run, if any. */
export interface StateReading {
  snapshot: StateSnapshot | null;
  /** The process holding the writer lock, when it is alive. */
  liveHolder: LockHolder | null;
  /** The lock's holder when its process is gone (a run killed or crashed). */
  deadHolder: LockHolder | null;
}

export async function readState(source: DashboardSource): Promise<StateReading> {
  const holder = (await readHolder(layoutOf(source.stateDir, 'both').lockPath)) ?? null;
  const alive = holder && holderState(holder) === 'alive' ? holder : null;
  const snapshot = await readStateSnapshot(source.stateDir);
  return {
    snapshot: snapshot && source.account !== undefined ? accountSnapshot(snapshot, source.account) : snapshot,
    liveHolder: alive,
    deadHolder: holder && !alive ? holder : null,
  };
}

/**
 * A many-account store's snapshot as one account's: its checkpoint, coverage, rows and runs (the
 * store's pending work is shared). An account the store does not hold yet has nothing stored.
 */
export function accountSnapshot(s: StateSnapshot, account: string): StateSnapshot {
  const own = s.accounts?.find((a) => a.account === account);
  const { accounts: _all, ...rest } = s;
  return {
    ...rest,
    checkpoint: own?.checkpoint ?? null,
    coverage: own?.coverage ?? [],
    coverageHoles: own?.coverageHoles ?? [],
    rows: own ? own.rows : s.format === 'parquet' ? null : 0,
    rejected: own?.rejected ?? 0,
    lastRuns: s.lastRuns.filter((r) => r.account === account),
    volumeAnomalies: own?.volumeAnomalies ?? [],
    lastVerification: own?.lastVerification ?? null,
  };
}

/** A query took longer than the dashboard allows (it is interrupted, nothing is left running). */
export class QueryTimeoutError extends Error {}

/**
 * Reads the Parquet dataset with SQL in an in-memory DuckDB of its own. Each query runs on a
 * connection of its own (so a slow one does not hold up the others), interrupted after
 * `timeoutMs`; the glob also matches deeper partition levels (account=…/date=…), read as columns
 * (hive_partitioning). Answers can be cached until the dataset's files change (`cached`).
 */
export class ParquetReader {
  private readonly cache = new Map<string, { signature: string; value: Promise<unknown> }>();

  private constructor(
    private readonly db: Db,
    readonly root: string,
    private readonly timeoutMs: number,
    /** Only this account's rows (a many-account dataset). */
    readonly account: string | undefined,
  ) {}

  static async open(root: string, opts: { timeoutMs?: number; threads?: number; account?: string } = {}): Promise<ParquetReader> {
    const db = await openDb(':memory:', { threads: opts.threads ?? 2, memoryLimit: '1GB' });
    return new ParquetReader(db, root, opts.timeoutMs ?? 10_000, opts.account);
  }

  /** The glob of every Parquet file of the dataset (a bound parameter, never spliced into SQL text). */
  get glob(): string {
    return join(this.root, '**', '*.parquet');
  }

  /** The dataset as a table expression; its one placeholder is the glob. */
  static readonly FROM = 'read_parquet(?, hive_partitioning = true, union_by_name = true)';

  /** What this reader reads as a table expression: the dataset, or one account's rows of it (placeholders: the glob, the account). */
  get from(): string {
    return this.account === undefined ? ParquetReader.FROM : `(SELECT * FROM ${ParquetReader.FROM} WHERE account = ?)`;
  }

  /** True when the dataset has at least one partition directory. */
  hasData(): boolean {
    return existsSync(this.root);
  }

  /**
   * What identifies the dataset's content: every file's path, size and modification time (a run
   * replaces a partition's file by a rename, which changes them). A few ms for a year of partitions.
   */
  async signature(): Promise<string> {
    const parts: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const p = join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.name.endsWith('.parquet')) {
          const st = await stat(p).catch(() => null);
          if (st) parts.push(`${p}:${st.size}:${st.mtimeMs}:${st.ino}`);
        }
      }
    };
    await walk(this.root);
    return createHash('sha256').update(parts.sort().join('\n')).digest('hex');
  }

  /** `compute()`'s answer under `key`, computed again only when the dataset's files have changed. */
  async cached<T>(key: string, compute: () => Promise<T>): Promise<T> {
    const signature = await this.signature();
    const hit = this.cache.get(key);
    if (hit && hit.signature === signature) return hit.value as Promise<T>;
    const value = compute();
    this.cache.set(key, { signature, value });
    value.catch(() => this.cache.delete(key));
    if (this.cache.size > 200) this.cache.delete(this.cache.keys().next().value!);
    return value;
  }

  /**
   * Runs `fn` on a connection of its own, interrupted after the timeout. A rewrite that replaced a
   * file between DuckDB's listing and its read is retried once.
   */
  async run<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const conn = await this.db.instance.connect();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        conn.interrupt();
      }, this.timeoutMs);
      try {
        return await fn(conn);
      } catch (err) {
        if (timedOut) throw new QueryTimeoutError(`the query took longer than ${this.timeoutMs / 1000} s and was stopped: narrow it (a filter, a date range)`);
        if (attempt === 1 && /No such file|Could not open|IO Error/i.test(String((err as Error)?.message))) continue;
        throw err;
      } finally {
        clearTimeout(timer);
        conn.closeSync();
      }
    }
  }

  /** Rows as plain objects (BIGINT as number); `params` follow the glob. No files yet: no rows. */
  async rows<T = Record<string, unknown>>(sql: string, params: DuckDBValue[] = []): Promise<T[]> {
    if (!this.hasData()) return [];
    return this.run(async (conn) => {
      try {
        const reader = await conn.runAndReadAll(sql, [this.glob, ...(this.account === undefined ? [] : [this.account]), ...params]);
        return reader.getRowObjectsJS().map(plain) as T[];
      } catch (err) {
        if (/No files found/i.test(String((err as Error)?.message))) return [];
        throw err;
      }
    });
  }

  close(): void {
    this.db.close();
  }
}

function plain(row: Record<string, unknown>): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) o[k] = typeof v === 'bigint' ? Number(v) : v;
  return o;
}
