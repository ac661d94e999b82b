/**
 * Small helpers over @duckdb/node-api: open a file with our settings, read rows as plain objects.
 *
 * openDb is the one way session-etl opens DuckDB: every instance runs with external access off
 * (`enable_external_access = false`: no file outside `allowedDirectories`, no URL, no extension
 * loaded) and its configuration locked (`lock_configuration = true`) once set up, so that no
 * statement — ours, or one a file smuggled in (a macro, a view) — can read or write anywhere else.
 */
import { resolve } from 'node:path';
import { DuckDBConnection, DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { traceInstance } from '../util/memory-trace.js';

export interface Db {
  /** Where further connections to this file come from (each opened on this file, as `conn` is). */
  instance: Pick<DuckDBInstance, 'connect'>;
  conn: DuckDBConnection;
  path: string;
  /** The rows of a row group DuckDB writes to this file (a writer's choice; DuckDB's default otherwise). */
  rowGroupRows: number;
  /**
   * Attaches the file again with row groups of `rows` (a writer attached with a row group size:
   * store/row-groups.ts), then sets rowGroupRows. Only while no connection of this Db is inside a
   * transaction: the caller holds every writer out (a new store's first commit: table-sink.ts).
   */
  resizeRowGroups?(rows: number): Promise<void>;
  /** A writer's resizeRowGroups for rows of `rowBytes` bytes (its budget's row group bytes: open-data-dir.ts). */
  fitRowGroups?(rowBytes: number): Promise<void>;
  /** Closes the file. */
  close(): Promise<void>;
}

/** An instance's settings: a reader's, or a writer's. */
/** What a writer is opened with; a reader takes none of it. */
export interface DbSettings {
  readOnly?: boolean;
  threads?: number;
  memoryLimit?: string;
  /** Where DuckDB spills what does not fit in memoryLimit (a writer's; see open-data-dir.ts). */
  tempDirectory?: string;
  /**
   * The only directories DuckDB may read or write files in (the data directory, say: its Parquet
   * dataset, NDJSON pending files, .tmp/), besides the database file itself and tempDirectory.
   * Empty: none.
   */
  allowedDirectories: readonly string[];
  /**
   * A writer's row group size, rows (a multiple of 2048): the largest unit DuckDB compresses at once,
   * outside its memory pool (store/row-groups.ts). DuckDB takes it only when attaching a file, so the
   * file is attached to an in-memory instance and made each connection's default database. A
   * function is asked once the file is open (to measure what it holds), before anything is written.
   */
  rowGroupRows?: number | ((conn: DuckDBConnection) => Promise<number>);
}

function instanceConfig(opts: DbSettings): Record<string, string> {
  // Never fetch or load an extension: a data directory holding, say, an SQLite file under our name
  // would otherwise make DuckDB download the sqlite extension from the internet to open it.
  const config: Record<string, string> = { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' };
  if (opts.readOnly) config.access_mode = 'READ_ONLY';
  if (opts.threads) config.threads = String(opts.threads);
  if (opts.memoryLimit) config.memory_limit = opts.memoryLimit;
  // preserve_insertion_order stays on: a merge relies on the order rows are appended in (merge.ts:
  // rows of its own append are told apart by row id), and off it changed which rows a merge took.
  if (opts.tempDirectory) config.temp_directory = opts.tempDirectory;
  // A writer checkpoints when it closes the store (SessionStore.close): DuckDB's default (a checkpoint once
  // the WAL passes 16 MiB) rewrote the table's partly filled row groups after every merge, ~1 s each
  // on a 1 M-row table (docs/benchmarks.md). A crash before the checkpoint only replays the WAL.
  if (!opts.readOnly) config.checkpoint_threshold = '1GB';
  return config;
}

/**
 * Opens (or creates) a DuckDB file, external access off but `allowedDirectories`, its configuration
 * locked. Every connection (this one and those `instance.connect()` gives) uses UTC, so that dates of
 * TIMESTAMPTZ values are UTC dates; none can change a setting afterwards.
 */
export async function openDb(path: string, opts: DbSettings): Promise<Db> {
  if (opts.rowGroupRows !== undefined && path !== ':memory:') return attachDb(path, opts.rowGroupRows, opts);
  const instance = await DuckDBInstance.create(path, instanceConfig(opts));
  let conn: DuckDBConnection | undefined;
  try {
    conn = await instance.connect();
    // Set on the running instance: DuckDB takes neither a list (allowed_directories) nor TimeZone
    // (its ICU extension loads after the config) as an option of create().
    await conn.run(lockDownSql(opts.allowedDirectories));
  } catch (err) {
    conn?.closeSync();
    instance.closeSync();
    throw err;
  }
  const untrace = traceInstance(instance);
  return dbHandle(instance, conn, path, DUCKDB_ROW_GROUP_ROWS, () => {
    untrace();
    instance.closeSync();
  });
}

/** DuckDB's row group size when a file is opened without one. */
export const DUCKDB_ROW_GROUP_ROWS = 122_880;

/** The name a writer's file is attached under (every connection of its Db uses it as its default database). */
const ATTACHED = 'store';

/**
 * A file attached with its row group size to an in-memory instance, then locked down as openDb
 * does; every connection of the Db starts in it.
 */
async function attachDb(path: string, rowGroupRows: NonNullable<DbSettings['rowGroupRows']>, opts: DbSettings): Promise<Db> {
  const instance = await DuckDBInstance.create(':memory:', instanceConfig(opts));
  let chosen = 0;
  try {
    const setup = await instance.connect();
    try {
      let rows = rowGroupRows;
      if (typeof rows === 'function') {
        // Opened with DuckDB's size to measure what the file holds, then attached again with the size chosen.
        await setup.run(`ATTACH ${sqlString(path)} AS ${ATTACHED}`);
        await setup.run(`USE ${ATTACHED}`);
        rows = await rows(setup);
        await setup.run('USE memory');
        await setup.run(`DETACH ${ATTACHED}`);
      }
      checkRowGroupRows(rows);
      await setup.run(`ATTACH ${sqlString(path)} AS ${ATTACHED} (ROW_GROUP_SIZE ${rows})`);
      chosen = rows;
      await setup.run(lockDownSql(opts.allowedDirectories));
    } finally {
      setup.closeSync();
    }
    const connect = async (): Promise<DuckDBConnection> => {
      const c = await instance.connect();
      await c.run(`USE ${ATTACHED}`);
      return c;
    };
    const untrace = traceInstance(instance);
    const db = dbHandle({ connect }, await connect(), path, chosen, () => {
      untrace();
      instance.closeSync();
    });
    db.resizeRowGroups = async (rows: number) => {
      checkRowGroupRows(rows);
      if (rows === db.rowGroupRows) return;
      // A connection of its own, in the in-memory database: the Db's connections keep the name
      // ATTACHED as their default and find the file attached again under it (their temp tables stay).
      const c = await instance.connect();
      try {
        await c.run(`DETACH ${ATTACHED}`);
        await c.run(`ATTACH ${sqlString(path)} AS ${ATTACHED} (ROW_GROUP_SIZE ${rows})`);
      } finally {
        c.closeSync();
      }
      db.rowGroupRows = rows;
    };
    return db;
  } catch (err) {
    instance.closeSync();
    throw err;
  }
}

function checkRowGroupRows(rows: number): void {
  if (!Number.isInteger(rows) || rows < 2048 || rows % 2048 !== 0) throw new RangeError(`a row group size must be a multiple of 2048 rows, got ${rows}`);
}

/** The statements that set up an instance and lock it (see openDb). */
export function lockDownSql(allowedDirectories: readonly string[]): string {
  const dirs = allowedDirectories.map((d) => sqlString(resolve(d))).join(', ');
  return [
    "SET GLOBAL TimeZone = 'UTC'",
    `SET allowed_directories = [${dirs}]`,
    'SET enable_external_access = false',
    'SET lock_configuration = true',
  ].join(';\n');
}

/** A Db whose close (at most once) closes `conn`, then runs `release` (closing or detaching the file). */
function dbHandle(instance: Db['instance'], conn: DuckDBConnection, path: string, rowGroupRows: number, release: () => void | Promise<void>): Db {
  let closed = false;
  const db: Db = {
    instance,
    conn,
    path,
    rowGroupRows,
    async close() {
      if (closed) return;
      closed = true;
      conn.closeSync();
      await release();
    },
  };
  return db;
}

/**
 * Whether the connection's current database has this table. A statement that fails inside a
 * transaction aborts it (every later one fails), so a table that may not exist (a store of an older
 * version, read without migrating it) is looked up first instead of read and caught.
 */
export async function tableExists(conn: DuckDBConnection, name: string): Promise<boolean> {
  const rows = await queryRows<{ n: bigint | number }>(
    conn,
    'SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = $1 AND database_name = current_database() AND schema_name = current_schema()',
    [name],
  );
  return Number(rows[0]?.n ?? 0) > 0;
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
