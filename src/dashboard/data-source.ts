/**
 * Where the dashboard reads a data directory, and how it reads the committed Parquet dataset:
 * through an in-memory DuckDB of its own (the state: state-reader.ts). It never takes the writer lock.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { openDb, type Db } from '../store/duckdb.js';
import { layoutOf } from '../store/layout.js';

/**
 * The directory holding state.json and the lock (the data directory, or a shard's store directory),
 * the root of the Parquet dataset, and with `account`, that account of a many-account store.
 */
export interface DashboardSource {
  stateDir: string;
  parquetRoot: string;
  account?: string;
}

export function sourceOfDataDir(dataDir: string): DashboardSource {
  return { stateDir: dataDir, parquetRoot: layoutOf(dataDir, 'both').parquetDir };
}

/** A query took longer than the dashboard allows (it is interrupted, nothing is left running). */
export class QueryTimeoutError extends Error {}

/**
 * The time a query may spend in DuckDB: after `ms` it calls `onTimeout` (which interrupts the
 * connection). Time spent `outside` (a download waiting for its client) does not count, so a slow
 * reader is not cut off by the query's limit.
 */
export class QueryClock {
  private since = 0;
  private timer: NodeJS.Timeout | undefined;
  timedOut = false;

  constructor(private left: number, private readonly onTimeout: () => void) {
    this.start();
  }

  async outside<T>(fn: () => Promise<T>): Promise<T> {
    this.stop();
    try {
      return await fn();
    } finally {
      this.start();
    }
  }

  private start(): void {
    if (this.timedOut) return;
    this.since = Date.now();
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.onTimeout();
    }, Math.max(0, this.left));
  }

  stop(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.left -= Date.now() - this.since;
  }
}

/**
 * Reads the Parquet dataset with SQL in an in-memory DuckDB of its own, each query on a connection
 * of its own (so a slow one does not hold up the others); the glob also matches deeper partition
 * levels (account=…/date=…), read as columns. Answers can be cached until the files change.
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

  /** `memoryLimit`: DuckDB's memory_limit (docs/configuration.md "Idle memory"; default 1GB). */
  static async open(root: string, opts: { timeoutMs?: number; threads?: number; account?: string; memoryLimit?: string } = {}): Promise<ParquetReader> {
    const db = await openDb(':memory:', { threads: opts.threads ?? 2, memoryLimit: opts.memoryLimit ?? '1GB', allowedDirectories: [root] });
    return new ParquetReader(db, root, opts.timeoutMs ?? 10_000, opts.account);
  }

  /** The glob of every Parquet file of the dataset (a bound parameter, never spliced into SQL text). */
  get glob(): string {
    return join(this.root, '**', '*.parquet');
  }

  /** The dataset, or one account's rows of it, as a table expression (placeholders: the glob, the account). */
  get from(): string {
    const all = 'read_parquet(?, hive_partitioning = true, union_by_name = true)';
    return this.account === undefined ? all : `(SELECT * FROM ${all} WHERE account = ?)`;
  }

  private bind(params: DuckDBValue[]): DuckDBValue[] {
    return [this.glob, ...(this.account === undefined ? [] : [this.account]), ...params];
  }

  hasData(): boolean {
    return existsSync(this.root);
  }

  /** Every file's path, size, mtime and inode (a run replaces a file by a rename). A few ms for a year of partitions. */
  async signature(): Promise<string> {
    const parts: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
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

  /** `compute()`'s answer under `key`, computed again when the dataset's files have changed. */
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
   * Runs `fn` on a connection of its own, interrupted after the timeout (DuckDB's time: see
   * QueryClock). A rewrite that replaced a file between DuckDB's listing and its read is retried
   * once, unless `retryable()` says the work cannot be done again (a download already under way).
   */
  async run<T>(fn: (conn: DuckDBConnection, clock: QueryClock) => Promise<T>, retryable: () => boolean = () => true, timeoutMs = this.timeoutMs): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const conn = await this.db.instance.connect();
      const clock = new QueryClock(timeoutMs, () => conn.interrupt());
      try {
        return await fn(conn, clock);
      } catch (err) {
        if (clock.timedOut) throw new QueryTimeoutError(`the query took longer than ${timeoutMs / 1000} s and was stopped: narrow it (a filter, a date range)`);
        if (attempt === 1 && retryable() && /No such file|Could not open|IO Error/i.test(String((err as Error)?.message))) continue;
        throw err;
      } finally {
        clock.stop();
        conn.closeSync();
      }
    }
  }

  /**
   * Streams a query's rows to `onRows` one DuckDB chunk (~2,048 rows) at a time, the next read only
   * once `onRows` has settled, whose time does not count against `timeoutMs`; an interrupted stream
   * throws QueryTimeoutError, never ends as if complete. No files yet: no rows.
   */
  async stream(
    sql: string,
    params: DuckDBValue[],
    onRows: (columns: string[], rows: unknown[][]) => Promise<void>,
    timeoutMs = this.timeoutMs,
  ): Promise<void> {
    if (!this.hasData()) return;
    let delivered = false;
    await this.run(
      async (conn, clock) => {
        try {
          const result = await conn.stream(sql, this.bind(params));
          const columns = result.columnNames();
          for (;;) {
            const chunk = await result.fetchChunk();
            if (!chunk || chunk.rowCount === 0) break;
            delivered = true;
            const rows = chunk.getRows() as unknown[][];
            await clock.outside(() => onRows(columns, rows));
          }
          // DuckDB ends an interrupted stream like a finished one: say it was cut.
          if (clock.timedOut) throw new QueryTimeoutError('interrupted');
        } catch (err) {
          if (!delivered && /No files found/i.test(String((err as Error)?.message))) return;
          throw err;
        }
      },
      () => !delivered,
      timeoutMs,
    );
  }

  /** Rows as plain objects (BIGINT as number). No files yet: no rows. */
  async rows<T = Record<string, unknown>>(sql: string, params: DuckDBValue[] = []): Promise<T[]> {
    if (!this.hasData()) return [];
    return this.run(async (conn) => {
      try {
        const reader = await conn.runAndReadAll(sql, this.bind(params));
        const plain = ([k, v]: [string, unknown]) => [k, typeof v === 'bigint' ? Number(v) : v];
        return reader.getRowObjectsJS().map((row) => Object.fromEntries(Object.entries(row).map(plain))) as T[];
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
