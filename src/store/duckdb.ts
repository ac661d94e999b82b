/**
 * Helpers over @duckdb/node-api. openDb is the one way session-etl opens DuckDB: external access off
 * (no file outside `allowedDirectories`, no URL, no extension) and the configuration locked once set
 * up, so that no statement (ours, or a macro or view a file smuggled in) reads or writes elsewhere.
 */
import { resolve } from 'node:path';
import { DuckDBConnection, DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { traceInstance } from '../util/memory-trace.js';
import { ReadGate } from './read-gate.js';
import { wrapWriteError } from './errors.js';

export interface Db {
  /** Further connections to this file (a writer's pass its gate). */
  instance: Pick<DuckDBInstance, 'connect'>;
  conn: DuckDBConnection;
  path: string;
  /** The rows of a row group DuckDB writes to this file (a writer's choice; DuckDB's default otherwise). */
  rowGroupRows: number;
  /** A writer's: every statement of its connections passes it, so that resizeRowGroups runs alone (read-gate.ts). */
  gate?: ReadGate;
  /**
   * Attaches the file again with row groups of `rows`, waiting for the statements and transactions
   * under way to end; the caller must not be inside a transaction on the Db (it would wait for itself).
   */
  resizeRowGroups?(rows: number): Promise<void>;
  /** A writer's resizeRowGroups for rows of `rowBytes` bytes (its budget's row group bytes: open-data-dir.ts). */
  fitRowGroups?(rowBytes: number): Promise<void>;
  close(): Promise<void>;
}

/** What a writer is opened with; a reader takes none of it. */
export interface DbSettings {
  readOnly?: boolean;
  threads?: number;
  memoryLimit?: string;
  /** Where DuckDB spills what does not fit in memoryLimit (a writer's; see open-data-dir.ts). */
  tempDirectory?: string;
  /** The only directories DuckDB may use files in, besides the database file and tempDirectory. */
  allowedDirectories: readonly string[];
  /**
   * A writer's row group size (a multiple of 2048; row-groups.ts). DuckDB takes it only when attaching
   * a file, so the file is attached to an in-memory instance. A function is asked once the file is
   * open (to measure what it holds), before anything is written.
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
  // preserve_insertion_order stays on: a merge tells its own appended rows by row id (merge.ts).
  if (opts.tempDirectory) config.temp_directory = opts.tempDirectory;
  // A writer checkpoints when it closes: DuckDB's default (at 16 MiB of WAL) rewrote partly filled row
  // groups after every merge, ~1 s each on 1 M rows (docs/benchmarks.md). A crash only replays the WAL.
  if (!opts.readOnly) config.checkpoint_threshold = '1GB';
  return config;
}

/** Opens (or creates) a DuckDB file, locked down; every connection uses UTC (dates of TIMESTAMPTZ are UTC dates). */
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

const DUCKDB_ROW_GROUP_ROWS = 122_880;

const ATTACHED = 'store';

/** A file attached with its row group size to an in-memory instance, locked down; connections pass the Db's gate. */
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
    const gate = new ReadGate();
    const connect = async (): Promise<DuckDBConnection> => {
      const c = gatedConnection(await instance.connect(), gate);
      await c.run(`USE ${ATTACHED}`);
      return c;
    };
    const untrace = traceInstance(instance, connect);
    const db = dbHandle({ connect }, await connect(), path, chosen, () => {
      untrace();
      instance.closeSync();
    });
    db.gate = gate;
    db.resizeRowGroups = async (rows: number) => {
      checkRowGroupRows(rows);
      if (rows === db.rowGroupRows) return;
      await gate.exclusive(async () => {
        // Not gated: the Db's connections find the file attached again under ATTACHED (temp tables stay).
        const c = await instance.connect();
        try {
          await c.run(`DETACH ${ATTACHED}`);
          try {
            await c.run(`ATTACH ${sqlString(path)} AS ${ATTACHED} (ROW_GROUP_SIZE ${rows})`);
          } catch (err) {
            // Never left without the file: attached again as it was (the error still fails the caller).
            await c.run(`ATTACH IF NOT EXISTS ${sqlString(path)} AS ${ATTACHED} (ROW_GROUP_SIZE ${db.rowGroupRows})`).catch(() => {});
            throw err;
          }
        } finally {
          c.closeSync();
        }
        db.rowGroupRows = rows;
      });
    };
    return db;
  } catch (err) {
    instance.closeSync();
    throw err;
  }
}

/** Methods that run a statement to its end within the call; those that leave one running are refused (gatedConnection). */
const WHOLE_STATEMENT = new Set<string | symbol>(['run', 'runAndRead', 'runAndReadAll', 'runAndReadUntil', 'streamAndReadAll']);
const NO_STATEMENT = new Set<string | symbol>(['interrupt', 'progress']);

/**
 * `c` with every statement passing `gate`: a statement enters as a reader and leaves when it ends; a
 * BEGIN keeps the connection inside until its COMMIT or ROLLBACK (read from the statements' first words).
 */
function gatedConnection(c: DuckDBConnection, gate: ReadGate): DuckDBConnection {
  /** Set while the connection is inside a transaction: leaves the gate. */
  let inTransaction: (() => void) | undefined;
  const leaveTransaction = () => {
    inTransaction?.();
    inTransaction = undefined;
  };
  const statement = async <T>(sql: unknown, call: () => Promise<T>): Promise<T> => {
    const effect = typeof sql === 'string' ? transactionEffect(sql) : undefined;
    if (inTransaction) {
      try {
        return await call();
      } finally {
        // A COMMIT or ROLLBACK ends the transaction even when it fails (DuckDB rolls back).
        if (effect === 'end') leaveTransaction();
      }
    }
    const leave = await gate.enter();
    try {
      const result = await call();
      if (effect === 'begin') inTransaction = leave;
      return result;
    } finally {
      if (inTransaction !== leave) leave();
    }
  };
  return new Proxy(c, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (WHOLE_STATEMENT.has(key)) return (...args: unknown[]) => statement(args[0], () => fn.apply(target, args) as Promise<unknown>);
      if (key === 'closeSync' || key === 'disconnectSync') {
        return () => {
          leaveTransaction();
          fn.apply(target);
        };
      }
      if (NO_STATEMENT.has(key)) return fn.bind(target);
      return () => {
        throw new Error(`DuckDBConnection.${String(key)} is not available on a writer's connection (store/duckdb.ts gatedConnection)`);
      };
    },
  });
}

/** Whether a SQL text leaves its connection inside a transaction ('begin'), out of one ('end'), or as it was. */
export function transactionEffect(sql: string): 'begin' | 'end' | undefined {
  let effect: 'begin' | 'end' | undefined;
  for (const m of sql.matchAll(/(?:^|;)\s*(BEGIN|START\s+TRANSACTION|COMMIT|END|ROLLBACK|ABORT)\b/gi)) {
    effect = /^(BEGIN|START)/i.test(m[1]!) ? 'begin' : 'end';
  }
  return effect;
}

function checkRowGroupRows(rows: number): void {
  if (!Number.isInteger(rows) || rows < 2048 || rows % 2048 !== 0) throw new RangeError(`a row group size must be a multiple of 2048 rows, got ${rows}`);
}

function lockDownSql(allowedDirectories: readonly string[]): string {
  const dirs = allowedDirectories.map((d) => sqlString(resolve(d))).join(', ');
  return [
    "SET GLOBAL TimeZone = 'UTC'",
    `SET allowed_directories = [${dirs}]`,
    'SET enable_external_access = false',
    'SET lock_configuration = true',
  ].join(';\n');
}

/** A Db whose close (at most once) closes `conn`, then runs `release`. */
function dbHandle(instance: Db['instance'], conn: DuckDBConnection, path: string, rowGroupRows: number, release: () => void | Promise<void>): Db {
  let closed = false;
  return {
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
}

/** Whether the current database has this table: looked up, since a failing read would abort the transaction. */
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

/** Runs `fn` between BEGIN and COMMIT; on a failure rolls back and throws `wrap(err)`. */
export async function inTransaction<T>(c: DuckDBConnection, fn: () => Promise<T>, wrap = (err: unknown): unknown => err): Promise<T> {
  await c.run('BEGIN TRANSACTION');
  try {
    const result = await fn();
    await c.run('COMMIT');
    return result;
  } catch (err) {
    await c.run('ROLLBACK').catch(() => {});
    throw wrap(err);
  }
}

/** Runs `fn` in one transaction on `c`; a failure rolls it back and is thrown as the write error of `what`. */
export function inWriteTransaction<T>(c: DuckDBConnection, what: string, fn: () => Promise<T>): Promise<T> {
  return inTransaction(c, fn, (err) => wrapWriteError(err, what));
}

/** Quotes a string as a SQL literal (for file paths in COPY, which cannot be bound parameters). */
export function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}
