/** The state tables of a data directory, their creation and migration, and the check that a DuckDB file is ours. */
import { readdir } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import { SESSION_COLUMNS, sessionsTableDdl } from './contract.js';
import { openDb, queryRows } from './duckdb.js';
import { DataDirError } from './errors.js';
import { NULL_PARTITION, type OutputFormat, type StoreLayout } from './layout.js';
import { storeShape, type StoreAccounts, type StoreShape } from './shape.js';
import { VERIFIED_DAYS_DDL } from './verify-log.js';

/** 2: no PRIMARY KEY on sessions. 3: state rows carry an account, a many-account store's sessions too (docs/accounts.md). */
export const SCHEMA_VERSION = 3;

export type { StoreAccounts } from './shape.js';

export const COLUMN_LIST = SESSION_COLUMNS.map((c) => c.name).join(', ');
/**
 * A stored row's content (every column but extracted_at) as one 64-bit hash: a session fetched again
 * with this unchanged was re-read, not updated (merge.ts, parquet-only-sink.ts).
 */
export const CONTENT_HASH = `hash(${SESSION_COLUMNS.filter((c) => c.name !== 'extracted_at').map((c) => c.name).join(', ')})`;
export const PARTITION_OF_STORED = `COALESCE(strftime(started_at, '%Y-%m-%d'), '${NULL_PARTITION}')`;

const STATE_DDL = [
  `CREATE TABLE IF NOT EXISTS _session_etl_meta (key VARCHAR PRIMARY KEY, value VARCHAR)`,
  `CREATE TABLE IF NOT EXISTS _coverage (start_s BIGINT NOT NULL, end_s BIGINT NOT NULL, run_id VARCHAR, committed_at TIMESTAMPTZ NOT NULL)`,
  // A rewrite removes only the marks it saw before its COPY: a merge landing meanwhile keeps its mark.
  `CREATE TABLE IF NOT EXISTS _parquet_pending (partition VARCHAR NOT NULL, gen BIGINT NOT NULL DEFAULT 0)`,
  `CREATE TABLE IF NOT EXISTS _pending_files (file VARCHAR PRIMARY KEY, extracted_at DOUBLE NOT NULL, rows BIGINT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS rejected_sessions (
     session_id VARCHAR, field VARCHAR, reason VARCHAR, raw VARCHAR,
     window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, run_id VARCHAR, rejected_at TIMESTAMPTZ)`,
  `CREATE TABLE IF NOT EXISTS _runs (
     run_id VARCHAR PRIMARY KEY, kind VARCHAR, range_from TIMESTAMPTZ, range_to TIMESTAMPTZ,
     started_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, outcome VARCHAR,
     windows INTEGER, sessions_written BIGINT, sessions_new BIGINT, sessions_updated BIGINT, rejected BIGINT,
     requests BIGINT, retries BIGINT, rate_limited BIGINT, bisections BIGINT, partitions_written INTEGER, error VARCHAR)`,
  // Rate control (issue 14): time all workers were paused by 429s, and the pace learned (req/s; null: never limited).
  `ALTER TABLE _runs ADD COLUMN IF NOT EXISTS paused_ms BIGINT`,
  `ALTER TABLE _runs ADD COLUMN IF NOT EXISTS pace DOUBLE`,
  `CREATE TABLE IF NOT EXISTS _backfills (
     range_from BIGINT, range_to BIGINT, run_id VARCHAR, started_at TIMESTAMPTZ, completed_at TIMESTAMPTZ)`,
  // Accounts moved out of a Parquet-only store: their rows are left out when its files are rewritten (account-transfer.ts).
  `CREATE TABLE IF NOT EXISTS _removed_accounts (account VARCHAR PRIMARY KEY)`,
  // Schema 3: each state row belongs to an account ('' in a single-account store).
  ...['_coverage', '_pending_files', 'rejected_sessions', '_runs', '_backfills'].map(
    (t) => `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS account VARCHAR DEFAULT ''`,
  ),
  // Sessions a run read again as stored (issue 42): sessions_written counts new and updated only.
  `ALTER TABLE _runs ADD COLUMN IF NOT EXISTS sessions_unchanged BIGINT`,
  // What `session-etl verify` found, day by day (verify-log.ts).
  VERIFIED_DAYS_DDL,
];

/** Refuses a DuckDB file that another program wrote, or a newer session-etl. */
export async function checkOwnership(conn: DuckDBConnection, dbPath: string): Promise<void> {
  const sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'";
  const tables = await queryRows<{ table_name: string }>(conn, sql);
  const names = new Set(tables.map((t) => t.table_name));
  if (names.size > 0 && !names.has('_session_etl_meta')) {
    throw new DataDirError(
      `${dbPath} is a DuckDB file of another program (tables: ${[...names].slice(0, 5).join(', ')}); ` +
        'choose another --data-dir or move that file away',
    );
  }
  if (names.has('_session_etl_meta')) {
    const version = Number((await metaValue(conn, 'schema_version')) ?? 0);
    if (version > SCHEMA_VERSION) {
      throw new DataDirError(`${dbPath} was written by a newer session-etl (schema ${version}); upgrade session-etl`);
    }
  }
}

/**
 * Creates the tables, migrating older schemas, in one transaction. The statements are idempotent and
 * run in one call (a round trip each cost many small accounts: docs/benchmarks.md "Many accounts").
 */
export async function ensureSchema(
  c: DuckDBConnection,
  { format, accounts, newFile }: {
    format: OutputFormat;
    accounts: StoreAccounts;
    /** The file was just created: there is nothing to migrate. */
    newFile: boolean;
  },
): Promise<void> {
  try {
    await c.run(`BEGIN TRANSACTION;\n${storeDdl(format, storeShape(accounts)).join(';\n')}`);
    if (!newFile) await migrate(c, format);
    await c.run(`${metaInsert(format, accounts)};\nCOMMIT`);
  } catch (err) {
    await c.run('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** Brings a store of an older schema to this one, inside the caller's transaction. */
async function migrate(c: DuckDBConnection, format: OutputFormat): Promise<void> {
  // pragma_table_info: duckdb_columns() cost ~11 ms of CPU at each open (many accounts: docs/benchmarks.md).
  const genCol = await queryRows(c, `SELECT 1 FROM pragma_table_info('main._parquet_pending') WHERE name = 'gen'`);
  if (genCol.length === 0) {
    // Schema 1: one row per partition, primary key.
    await c.run('CREATE TABLE _parquet_pending_v2 AS SELECT partition, 0::BIGINT AS gen FROM _parquet_pending');
    await c.run('DROP TABLE _parquet_pending');
    await c.run('ALTER TABLE _parquet_pending_v2 RENAME TO _parquet_pending');
  }
  if (format !== 'parquet') await dropSessionsPrimaryKey(c);
}

/** The state tables, `_pending_rows`, and `sessions` (or, format parquet, `_session_days`). */
function storeDdl(format: OutputFormat, shape: StoreShape): string[] {
  return [...STATE_DDL, pendingRowsDdl(shape), format !== 'parquet' ? shape.tableDdl('sessions') : sessionDaysDdl(shape)];
}

/** Format parquet: the day of every session in the dataset, so that one moving to another day leaves its old file. */
export function sessionDaysDdl(shape: StoreShape): string {
  return `CREATE TABLE IF NOT EXISTS _session_days (${[...shape.key.split(', '), 'partition'].map((c) => `${c} VARCHAR NOT NULL`).join(', ')})`;
}

/** Committed rows wait here, without an index, until a flush merges them (see merge.ts). */
export function pendingRowsDdl(shape: StoreShape, table = '_pending_rows'): string {
  return shape.tableDdl(table, 'partition VARCHAR NOT NULL');
}

function metaInsert(format: OutputFormat, accounts: StoreAccounts): string {
  return `INSERT INTO _session_etl_meta VALUES ('schema_version', '${SCHEMA_VERSION}'), ('created_by', 'session-etl'), ('format', '${format}'),
         ('accounts', '${accounts}')
       ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE _session_etl_meta.key = 'schema_version'`;
}

/** Whether the store holds one account or many (a store from before schema 3 holds one). */
export async function recordedAccounts(conn: DuckDBConnection): Promise<StoreAccounts> {
  return (await metaValue(conn, 'accounts').catch(() => undefined)) === 'many' ? 'many' : 'single';
}

async function metaValue(conn: DuckDBConnection, key: string): Promise<string | undefined> {
  return (await queryRows<{ value: string }>(conn, `SELECT value FROM _session_etl_meta WHERE key = '${key}'`))[0]?.value;
}

/** Schema 1 gave the sessions table a PRIMARY KEY index: rebuilt without it, in started_at order. */
async function dropSessionsPrimaryKey(c: DuckDBConnection): Promise<void> {
  const pk = await queryRows<{ n: bigint }>(
    c,
    `SELECT count(*) AS n FROM duckdb_constraints() WHERE schema_name = 'main' AND table_name = 'sessions' AND constraint_type = 'PRIMARY KEY'`,
  );
  if (Number(pk[0]?.n ?? 0) === 0) return;
  await c.run(sessionsTableDdl('_sessions_v2'));
  await c.run(`INSERT INTO _sessions_v2 SELECT ${COLUMN_LIST} FROM sessions ORDER BY started_at, session_id`);
  await c.run('DROP TABLE sessions');
  await c.run('ALTER TABLE _sessions_v2 RENAME TO sessions');
}

/**
 * The format an existing store keeps: the recorded one (another asked for is refused), else the one
 * asked for, else what its contents show. `fileFormat`: what its DuckDB file's name says.
 */
export async function recordedFormat(
  conn: DuckDBConnection,
  layout: StoreLayout,
  fileFormat: OutputFormat,
  asked: OutputFormat | undefined,
): Promise<OutputFormat> {
  const recorded = (await metaValue(conn, 'format').catch(() => undefined)) as OutputFormat | undefined;
  if (recorded && asked && recorded !== asked) throw formatMismatch(layout.dataDir, recorded, asked);
  if (recorded) return recorded;
  if (asked) return asked;
  if (fileFormat === 'parquet') return 'parquet';
  // Sessions stored and no Parquet dataset: duckdb. Else (a dataset, or no rows yet) the default, both.
  const partitions = await readdir(layout.parquetDir).catch(() => [] as string[]);
  if (partitions.length) return 'both';
  const rows = await queryRows<{ n: bigint }>(conn, 'SELECT count(*) AS n FROM (SELECT 1 FROM sessions LIMIT 1)').catch(() => []);
  return Number(rows[0]?.n ?? 0) > 0 ? 'duckdb' : 'both';
}

export function formatMismatch(dataDir: string, stored: string, asked: OutputFormat): DataDirError {
  return new DataDirError(
    `data directory ${dataDir} holds format ${stored}, and format ${asked} was asked for (--format, SESSION_ETL_FORMAT or the ` +
      `configuration file): writing ${asked} there would miss the data stored so far. Drop the setting (the data directory's ` +
      `own format is used), set it to ${stored}, or give format ${asked} a new --data-dir`,
  );
}

/** A column as this release creates it (dflt: an SQL expression, or null). */
interface ExpectedColumn {
  name: string;
  type: string;
  dflt: string | null;
}

const expected = new Map<string, Promise<Map<string, ExpectedColumn[]>>>();

/** The tables of a store of this schema, format and accounts, made once in memory. */
function expectedTables(format: OutputFormat, accounts: StoreAccounts): Promise<Map<string, ExpectedColumn[]>> {
  const key = `${format}/${accounts}`;
  return expected.get(key) ?? expected.set(key, createExpectedTables(format, accounts)).get(key)!;
}

async function createExpectedTables(format: OutputFormat, accounts: StoreAccounts): Promise<Map<string, ExpectedColumn[]>> {
  const db = await openDb(':memory:', { allowedDirectories: [] });
  try {
    await db.conn.run(storeDdl(format, storeShape(accounts)).join(';\n'));
    const rows = await queryRows<{ t: string; c: string; type: string; dflt: string | null }>(
      db.conn,
      `SELECT table_name AS t, column_name AS c, data_type AS type, column_default AS dflt FROM duckdb_columns()
       WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name, column_index`,
    );
    const tables = new Map<string, ExpectedColumn[]>();
    for (const r of rows) (tables.get(r.t) ?? tables.set(r.t, []).get(r.t)!).push({ name: r.c, type: r.type, dflt: r.dflt });
    return tables;
  } finally {
    await db.close();
  }
}

export interface SchemaReading {
  /** The schema version the store records (0: none recorded). */
  version: number;
  /** Whether its tables lack anything this release reads (the next export or backfill upgrades it). */
  older: boolean;
}

/**
 * Lets this release's queries read an older store opened read-only, without writing: each missing
 * table an empty temporary table, each table lacking columns a temporary view adding them (default,
 * else NULL), which shadow the file's tables. The next writer migrates the file (ensureSchema).
 */
export async function readAsCurrentSchema(conn: DuckDBConnection, format: OutputFormat, accounts: StoreAccounts): Promise<SchemaReading> {
  const version = Number((await metaValue(conn, 'schema_version').catch(() => undefined)) ?? 0);
  const rows = await queryRows<{ t: string; c: string; db: string }>(
    conn,
    `SELECT table_name AS t, column_name AS c, current_database() AS db FROM duckdb_columns()
     WHERE database_name = current_database() AND schema_name = 'main'`,
  );
  const present = new Map<string, Set<string>>();
  for (const r of rows) (present.get(r.t) ?? present.set(r.t, new Set()).get(r.t)!).add(r.c);
  const db = rows[0]?.db ?? (await queryRows<{ db: string }>(conn, 'SELECT current_database() AS db'))[0]!.db;
  const statements: string[] = [];
  for (const [table, columns] of await expectedTables(format, accounts)) {
    const have = present.get(table);
    if (!have) {
      statements.push(`CREATE TEMP TABLE ${ident(table)} (${columns.map((c) => `${ident(c.name)} ${c.type}`).join(', ')})`);
      continue;
    }
    const missing = columns.filter((c) => !have.has(c.name));
    if (!missing.length) continue;
    const added = missing.map((c) => `CAST(${c.dflt ?? 'NULL'} AS ${c.type}) AS ${ident(c.name)}`);
    statements.push(`CREATE TEMP VIEW ${ident(table)} AS SELECT *, ${added.join(', ')} FROM ${ident(db)}.main.${ident(table)}`);
  }
  if (statements.length) await conn.run(statements.join(';\n'));
  return { version, older: statements.length > 0 || version < SCHEMA_VERSION };
}

function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
