/** Small helpers over @duckdb/node-api: open a file with our settings, read rows as plain objects. */
import { DuckDBConnection, DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';

export interface Db {
  /** Where further connections to this file come from (each opened on this file, as `conn` is). */
  instance: Pick<DuckDBInstance, 'connect'>;
  conn: DuckDBConnection;
  path: string;
  /** Attached to the instance shared by a many-account run (openSharedDuckDB), not an instance of its own. */
  shared: boolean;
  /** Closes the file (a file attached to the shared instance is checkpointed and detached). */
  close(): Promise<void>;
}

/**
 * One DuckDB instance for the writers of a many-account run (docs/accounts.md): each account's
 * own file is ATTACHed to it and made its connections' default database (USE), so the store's SQL
 * is unchanged, and DETACHed (checkpointed) when the account's store closes. The accounts share
 * one buffer pool, allocator and set of threads instead of starting and tearing down an instance
 * each, which was most of a small account's cost (docs/benchmarks.md "Many accounts").
 */
export interface SharedDuckDB {
  close(): Promise<void>;
}

let shared: { instance: DuckDBInstance; admin: DuckDBConnection; seq: number; users: number } | undefined;

/**
 * Makes writers (openDb without readOnly) attach their files to one instance until the returned
 * handle is closed. `memoryLimit` bounds the whole instance (all accounts open at once). Opened
 * again while open (two many-account jobs of `schedule` at once), it shares the same instance,
 * closed with its last user.
 */
export async function openSharedDuckDB(opts: { threads?: number; memoryLimit?: string } = {}): Promise<SharedDuckDB> {
  let mine = shared;
  if (mine) mine.users++;
  else {
    const instance = await DuckDBInstance.create(':memory:', instanceConfig(opts));
    const admin = await instance.connect();
    if (shared) {
      // Another caller opened one meanwhile: use it.
      admin.closeSync();
      instance.closeSync();
      mine = shared;
      mine.users++;
    } else shared = mine = { instance, admin, seq: 0, users: 1 };
  }
  const s = mine;
  let closed = false;
  return {
    async close() {
      if (closed) return;
      closed = true;
      if (--s.users > 0) return;
      if (shared === s) shared = undefined;
      s.admin.closeSync();
      s.instance.closeSync();
    },
  };
}

/** An instance's settings: a reader's, or a writer's (its own file's, or the shared instance's). */
function instanceConfig(opts: { readOnly?: boolean; threads?: number; memoryLimit?: string }): Record<string, string> {
  // Never fetch or load an extension: a data directory holding, say, an SQLite file under our name
  // would otherwise make DuckDB download the sqlite extension from the internet to open it.
  const config: Record<string, string> = { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' };
  if (opts.readOnly) config.access_mode = 'READ_ONLY';
  if (opts.threads) config.threads = String(opts.threads);
  if (opts.memoryLimit) config.memory_limit = opts.memoryLimit;
  // A writer checkpoints when it closes the store (SessionStore.close): DuckDB's default (a checkpoint once
  // the WAL passes 16 MiB) rewrote the table's partly filled row groups after every merge, ~1 s each
  // on a 1 M-row table (docs/benchmarks.md). A crash before the checkpoint only replays the WAL.
  if (!opts.readOnly) config.checkpoint_threshold = '1GB';
  return config;
}

/** Opens (or creates) a DuckDB file. Sessions use UTC so that dates of TIMESTAMPTZ values are UTC dates. */
export async function openDb(path: string, opts: { readOnly?: boolean; threads?: number; memoryLimit?: string } = {}): Promise<Db> {
  if (shared && !opts.readOnly && path !== ':memory:') return attachDb(shared, path);
  const instance = await DuckDBInstance.create(path, instanceConfig(opts));
  const conn = await instance.connect();
  await conn.run("SET TimeZone = 'UTC'");
  return dbHandle(instance, conn, path, false, () => instance.closeSync());
}

/** A writer's file attached to the shared instance (see openSharedDuckDB). */
async function attachDb(s: NonNullable<typeof shared>, path: string): Promise<Db> {
  const alias = `acc_${++s.seq}`;
  await s.admin.run(`ATTACH ${sqlString(path)} AS ${alias}`);
  const connect = async () => {
    const c = await s.instance.connect();
    try {
      await c.run(`USE ${alias}`);
      await c.run("SET TimeZone = 'UTC'");
    } catch (err) {
      c.closeSync();
      throw err;
    }
    return c;
  };
  let conn: DuckDBConnection;
  try {
    conn = await connect();
  } catch (err) {
    await s.admin.run(`DETACH ${alias}`).catch(() => {});
    throw err;
  }
  // DETACH checkpoints the file (as closing an instance does) and releases its lock.
  return dbHandle({ connect }, conn, path, true, () => s.admin.run(`DETACH ${alias}`).then(() => {}));
}

/** A Db whose close (at most once) closes `conn`, then runs `release` (closing or detaching the file). */
function dbHandle(instance: Db['instance'], conn: DuckDBConnection, path: string, shared: boolean, release: () => void | Promise<void>): Db {
  let closed = false;
  return {
    instance,
    conn,
    path,
    shared,
    async close() {
      if (closed) return;
      closed = true;
      conn.closeSync();
      await release();
    },
  };
}

export async function queryRows<T = Record<string, unknown>>(
  conn: DuckDBConnection,
  sql: string,
  params?: DuckDBValue[],
): Promise<T[]> {
  const reader = await conn.runAndReadAll(sql, params);
  return reader.getRowObjectsJS() as T[];
}

/** Quotes a string as a SQL literal (for file paths in COPY, which cannot be bound parameters). */
export function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}
