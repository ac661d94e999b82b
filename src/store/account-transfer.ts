/**
 * Moving an account's data into a many-account store (docs/accounts.md), from a per-account store
 * of the layout before schema 3 or another many-account store (the number of shards changed): one
 * transaction on the target copies its rows (committed but unmerged ones too, the newest version of
 * each session) and state, and records the move; the source is then emptied of it (removeAccounts).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { inWriteTransaction, queryRows, sqlString } from './duckdb.js';
import type { OutputFormat } from './layout.js';
import { NDJSON_COLUMNS, NDJSON_MAX_OBJECT_BYTES, NDJSON_SELECT } from './ndjson.js';
import { COLUMN_LIST, PARTITION_OF_STORED, pendingRowsDdl } from './schema.js';
import { storeShape, type StoreShape } from './shape.js';
import { join } from 'node:path';

/** Where an account's data comes from. */
export interface TransferSource {
  /** For messages and the record of the move. */
  describe: string;
  dbPath: string;
  format: OutputFormat;
  /** A store of this one account (the layout before schema 3): its rows have no account column. Else a many-account store. */
  whole: boolean;
  /** Its pending record files' directory. */
  pendingDir: string;
  /** With format parquet: the glob of the Parquet files that hold its rows. */
  filesGlob?: string;
}

const STATE_TABLES = ['_coverage', '_runs', '_backfills', 'rejected_sessions', '_verified_days'] as const;

/** The meta key recording that an account was moved into this store (so that a move cut short is finished, not done twice). */
export function movedKey(account: string): string {
  return `moved:${account}`;
}

/**
 * Copies `account`'s rows and state from `src` into the many-account store on `c` in one transaction,
 * marking its days for a Parquet rewrite (the caller flushes). Returns the number of sessions copied.
 */
export async function importAccount(
  c: DuckDBConnection,
  shape: StoreShape,
  format: OutputFormat,
  account: string,
  src: TransferSource,
  nextGen: () => Promise<bigint>,
): Promise<number> {
  const alias = 'mv_src';
  await c.run(`ATTACH ${sqlString(src.dbPath)} AS ${alias} (READ_ONLY)`);
  try {
    const own = src.whole ? 'TRUE' : `account = ${sqlString(account)}`;
    const srcCols = await columnsOf(c, alias);
    const mine = await columnsOf(c);
    const sources: string[] = [];
    if (src.format !== 'parquet' && srcCols.has('sessions')) sources.push(`SELECT ${COLUMN_LIST} FROM ${alias}.sessions WHERE ${own}`);
    if (src.format === 'parquet' && src.filesGlob) {
      sources.push(
        `SELECT ${COLUMN_LIST} FROM read_parquet(${sqlString(src.filesGlob)}, hive_partitioning = false, union_by_name = true) WHERE ${own}`,
      );
    }
    if (srcCols.has('_pending_rows')) sources.push(`SELECT ${COLUMN_LIST} FROM ${alias}._pending_rows WHERE ${own}`);
    const files = srcCols.has('_pending_files')
      ? await queryRows<{ file: string; extracted_at: number }>(
          c,
          `SELECT file, extracted_at FROM ${alias}._pending_files WHERE ${src.whole || !srcCols.get('_pending_files')!.has('account') ? 'TRUE' : own}`,
        )
      : [];
    if (files.length) {
      const paths = files.map((f) => join(src.pendingDir, f.file));
      sources.push(
        `SELECT * EXCLUDE (partition) FROM (SELECT ${NDJSON_SELECT} FROM read_json([${paths.map(sqlString).join(', ')}], columns = ${NDJSON_COLUMNS},
           format = 'newline_delimited', maximum_object_size = ${NDJSON_MAX_OBJECT_BYTES}, filename = true) r
         JOIN (VALUES ${paths.map((p, i) => `(${sqlString(p)}, ${files[i]!.extracted_at})`).join(', ')}) f(filename, extracted) USING (filename))`,
      );
    }
    const acct = sqlString(account);
    return await inWriteTransaction(c, `moving account ${account} from ${src.describe}`, async () => {
      let rows = 0;
      if (sources.length) {
        await c.run(
          `CREATE OR REPLACE TEMP TABLE _moved AS SELECT ${acct} AS account, * FROM (${sources.join(' UNION ALL ')})
           QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY extracted_at DESC) = 1`,
        );
        rows = Number((await queryRows<{ n: bigint }>(c, 'SELECT count(*) AS n FROM _moved'))[0]?.n ?? 0);
        if (format === 'parquet') {
          await c.run(`INSERT INTO _pending_rows SELECT ${shape.columnList}, ${PARTITION_OF_STORED} FROM _moved`);
        } else {
          await c.run(`DELETE FROM sessions WHERE account = ${acct}`);
          await c.run(`INSERT INTO sessions SELECT ${shape.columnList} FROM _moved ORDER BY started_at, session_id`);
          if (format === 'both') {
            await c.run(`INSERT INTO _parquet_pending SELECT DISTINCT ${PARTITION_OF_STORED}, $1 FROM _moved`, [await nextGen()]);
          }
        }
        await c.run('DROP TABLE _moved');
      }
      for (const t of STATE_TABLES) {
        const have = srcCols.get(t);
        if (!have) continue;
        const cols = [...mine.get(t)!].filter((col) => col === 'account' || have.has(col));
        const select = cols.map((col) =>
          col === 'account'
            ? `${acct} AS account`
            : t === '_runs' && col === 'run_id'
              ? // A run id another account's run has already (ids are random within a second): made unique with the account.
                `CASE WHEN run_id IN (SELECT run_id FROM main._runs) THEN run_id || '-' || ${acct} ELSE run_id END AS run_id`
              : col,
        );
        const where = src.whole || !have.has('account') ? 'TRUE' : own;
        await c.run(`DELETE FROM main.${t} WHERE account = ${acct}`);
        await c.run(`INSERT INTO main.${t} (${cols.join(', ')}) SELECT ${select.join(', ')} FROM ${alias}.${t} WHERE ${where}`);
      }
      await c.run(`DELETE FROM _removed_accounts WHERE account = ${acct}`);
      await c.run(`INSERT OR REPLACE INTO _session_etl_meta VALUES ($1, $2)`, [movedKey(account), src.describe]);
      return rows;
    });
  } finally {
    await c.run(`DETACH ${alias}`).catch(() => {});
  }
}

/** Removes moved accounts' rows and state from the store on `c` in one transaction, marking their days for a rewrite (the caller flushes). */
export async function removeAccounts(
  c: DuckDBConnection,
  format: OutputFormat,
  accounts: readonly string[],
  nextGen: () => Promise<bigint>,
  /** With format parquet: the glob of the store's own files (the days holding the accounts are read from them). */
  filesGlob?: string,
): Promise<void> {
  if (!accounts.length) return;
  const list = `(${accounts.map(sqlString).join(', ')})`;
  await inWriteTransaction(c, `removing accounts ${accounts.join(', ')} moved to another store`, async () => {
    if (format !== 'parquet') {
      if (format === 'both') {
        await c.run(`INSERT INTO _parquet_pending SELECT DISTINCT ${PARTITION_OF_STORED}, $1 FROM sessions WHERE account IN ${list}`, [await nextGen()]);
      }
      await c.run(`DELETE FROM sessions WHERE account IN ${list}`);
    } else {
      // The days of its files are rewritten without the accounts (the files themselves are the data).
      const gen = await nextGen();
      await c.run(`INSERT INTO _parquet_pending SELECT DISTINCT partition, $1 FROM _pending_rows WHERE account IN ${list}`, [gen]);
      if (filesGlob) {
        await c.run(
          `INSERT INTO _parquet_pending SELECT DISTINCT ${PARTITION_OF_STORED}, $1
           FROM read_parquet(${sqlString(filesGlob)}, hive_partitioning = false, union_by_name = true) WHERE account IN ${list}`,
          [gen],
        ).catch(noFilesYet);
      }
      await c.run(`INSERT OR IGNORE INTO _removed_accounts SELECT unnest([${accounts.map(sqlString).join(', ')}])`);
    }
    await c.run(`DELETE FROM _pending_rows WHERE account IN ${list}`);
    for (const t of STATE_TABLES) await c.run(`DELETE FROM ${t} WHERE account IN ${list}`);
  });
}

/**
 * `accounts adopt`: makes a single-account store a many-account one holding this account, in one
 * transaction, every day marked for a rewrite (format parquet: the days' rows loaded as pending rows,
 * so that a file without the account column is replaced, not merged). The caller flushes.
 */
export async function convertToManyAccounts(
  c: DuckDBConnection,
  format: OutputFormat,
  account: string,
  nextGen: () => Promise<bigint>,
  /** With format parquet: the glob of the store's day files. */
  filesGlob: string,
): Promise<void> {
  const acct = sqlString(account);
  await inWriteTransaction(c, `making the store account ${account}'s`, async () => {
    for (const t of [...STATE_TABLES, '_pending_files']) await c.run(`UPDATE ${t} SET account = ${acct}`);
    const gen = await nextGen();
    if (format !== 'parquet') {
      await c.run(storeShape('many').tableDdl('_sessions_many'));
      await c.run(`INSERT INTO _sessions_many SELECT ${acct}, ${COLUMN_LIST} FROM sessions ORDER BY started_at, session_id`);
      await c.run('DROP TABLE sessions');
      await c.run('ALTER TABLE _sessions_many RENAME TO sessions');
      if (format === 'both') await c.run(`INSERT INTO _parquet_pending SELECT DISTINCT ${PARTITION_OF_STORED}, $1 FROM sessions`, [gen]);
    }
    await c.run(pendingRowsDdl(storeShape('many'), '_pending_rows_many'));
    await c.run(`INSERT INTO _pending_rows_many SELECT ${acct}, * FROM _pending_rows`);
    if (format === 'parquet') {
      await c.run(
        `INSERT INTO _pending_rows_many SELECT ${acct}, ${COLUMN_LIST}, ${PARTITION_OF_STORED}
         FROM read_parquet(${sqlString(filesGlob)}, hive_partitioning = false)`,
      ).catch(noFilesYet);
    }
    await c.run('DROP TABLE _pending_rows');
    await c.run('ALTER TABLE _pending_rows_many RENAME TO _pending_rows');
    await c.run(`INSERT OR REPLACE INTO _session_etl_meta VALUES ('accounts', 'many')`);
  });
}

/** No day file yet: nothing to read (a read of none fails). */
function noFilesYet(err: unknown): void {
  if (!/No files found/i.test(String((err as Error).message))) throw err;
}

/** The columns of every table of a database (the connection's own without `database`), by table. */
async function columnsOf(c: DuckDBConnection, database?: string): Promise<Map<string, Set<string>>> {
  const rows = await queryRows<{ t: string; col: string }>(
    c,
    `SELECT table_name AS t, column_name AS col FROM duckdb_columns()
     WHERE database_name = ${database === undefined ? 'current_database()' : '$1'} AND schema_name = 'main'`,
    database === undefined ? [] : [database],
  );
  const by = new Map<string, Set<string>>();
  for (const r of rows) (by.get(r.t) ?? by.set(r.t, new Set()).get(r.t)!).add(r.col);
  return by;
}
