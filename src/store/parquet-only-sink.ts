/**
 * Format parquet: no sessions table. A commit loads a window's records into `_pending_rows`; a flush
 * merges each pending partition's rows with its old file into a new file, newest version of each session first.
 */
import { rm } from 'node:fs/promises';
import { parquetCopyOptions } from './row-groups.js';
import { join } from 'node:path';
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { unguessable } from '../util/temp-file.js';
import { inTransaction, queryRows, sqlString } from './duckdb.js';
import { wrapWriteError } from './errors.js';
import { checkPartition, type StoreLayout } from './layout.js';
import { NDJSON_ACCOUNT_SELECT, NDJSON_COLUMNS, NDJSON_MAX_OBJECT_BYTES } from './ndjson.js';
import type { Dataset } from './dataset/dataset.js';
import { CONTENT_HASH, sessionDaysDdl } from './schema.js';
import type { StoreShape } from './shape.js';
import type { SerialQueue } from './serial-queue.js';
import { addCounts, type AccountCounts, type FlushResult, type RecordFile, type Sink } from './sink.js';

export class ParquetOnlySink implements Sink {
  readonly keepsFiles = false;
  private fileSeq = 0;

  constructor(
    /** The store's main connection, and the queue that serialises writes on it. */
    private readonly conn: DuckDBConnection,
    private readonly writes: SerialQueue,
    private readonly layout: StoreLayout,
    private readonly shape: StoreShape,
    private readonly dataset: Dataset,
    /** Each day file's row groups. */
    private readonly rowGroupRows: number,
  ) {}

  async commitFiles(c: DuckDBConnection, files: readonly RecordFile[]): Promise<void> {
    // DuckDB parses the records itself, with explicit types (the scanner checked them).
    const list = files.map((f) => sqlString(f.path)).join(', ');
    const lineage = files.map((f) => `(${sqlString(f.path)}, ${f.extractedAt}, ${sqlString(f.account)})`).join(', ');
    await c.run(
      `INSERT INTO _pending_rows SELECT ${this.shape.columnList}, partition FROM (SELECT ${NDJSON_ACCOUNT_SELECT}
       FROM read_json([${list}], columns = ${NDJSON_COLUMNS}, format = 'newline_delimited', maximum_object_size = ${NDJSON_MAX_OBJECT_BYTES}, filename = true) r
       JOIN (VALUES ${lineage}) f(filename, extracted, account) USING (filename))`,
    );
  }

  /** The rows are in _pending_rows now: the files go, all at once (as merge.ts removes its own). */
  async afterCommit(files: readonly RecordFile[]): Promise<void> {
    await Promise.all(files.map((f) => rm(f.path, { force: true }).catch(() => {})));
  }

  /** Days with committed rows waiting, and days marked for a rewrite (an account moved out, or in: account-transfer.ts). */
  async pendingPartitions(conn: DuckDBConnection): Promise<string[]> {
    return (
      await queryRows<{ p: string }>(conn, 'SELECT partition AS p FROM _pending_rows UNION SELECT partition FROM _parquet_pending ORDER BY 1')
    ).map((r) => checkPartition(r.p, `${this.layout.dbPath} (_pending_rows or _parquet_pending)`));
  }

  /** Marks here are per day (a rewrite clears them all): any number above the stored ones. */
  async nextGen(c: DuckDBConnection): Promise<bigint> {
    const r = await queryRows<{ g: bigint | number | null }>(c, 'SELECT coalesce(max(gen), 0) AS g FROM _parquet_pending');
    return BigInt(r[0]?.g ?? 0) + 1n;
  }

  /**
   * Pending rows merged with each partition's old file. A session whose day changed is written into
   * its new day and left out of its old day's file (learnt from `_session_days`) in the same flush;
   * nothing pending is forgotten until every day is written, so a flush cut short is done again whole.
   */
  flush(): Promise<FlushResult> {
    return this.writes.run(async () => {
      const result: FlushResult = { partitions: [], counts: new Map() };
      const c = this.conn;
      await this.ensureDayIndex();
      if (Number((await queryRows<{ n: bigint }>(c, 'SELECT count(*) AS n FROM _pending_rows'))[0]?.n ?? 0) > 0) {
        // The newest pending version's day of each session, and its stored day when that is another (it moved).
        await c.run(
          `CREATE OR REPLACE TEMP TABLE _newest_day AS
           SELECT n.*, i.partition AS was FROM (
             SELECT ${this.shape.key}, partition FROM _pending_rows
             QUALIFY row_number() OVER (PARTITION BY ${this.shape.key} ORDER BY extracted_at DESC) = 1) n
           LEFT JOIN _session_days i ON ${this.shape.sameSession('i', 'n')} AND i.partition <> n.partition`,
        );
        const moved = await queryRows<{ p: string }>(c, 'SELECT DISTINCT was AS p FROM _newest_day WHERE was IS NOT NULL');
        if (moved.length) await c.run('INSERT INTO _parquet_pending SELECT unnest($1::VARCHAR[]), $2', [listValue(moved.map((r) => r.p)), await this.nextGen(c)]);
      } else {
        await c.run(`CREATE OR REPLACE TEMP TABLE _newest_day AS SELECT ${this.shape.key}, partition, partition AS was FROM _pending_rows WHERE false`);
      }
      const parts = await this.pendingPartitions(c);
      for (const p of parts) {
        const old = await this.dataset.read(p);
        try {
          const { counts, written } = await this.rewriteWith(p, old?.path);
          if (written) result.partitions.push(p);
          addCounts(result.counts, counts);
        } finally {
          await old?.done();
        }
      }
      // Every day written: the pending rows, the marks and the days of the sessions, in one transaction.
      await inTransaction(c, async () => {
        await c.run(`DELETE FROM _session_days WHERE (${this.shape.key}) IN (SELECT (${this.shape.key}) FROM _newest_day)`);
        await c.run(`INSERT INTO _session_days SELECT DISTINCT ${this.shape.key}, partition FROM _newest_day`);
        // Every file is rewritten without the accounts moved out (only a many-account store's move out): they are forgotten.
        if (result.partitions.length) {
          await c.run(`DELETE FROM _session_days WHERE ${this.shape.account()} IN (SELECT account FROM _removed_accounts)`);
          await c.run('DELETE FROM _removed_accounts');
        }
        if (parts.length) {
          const list = `(SELECT unnest([${parts.map(sqlString).join(', ')}]))`;
          await c.run(`DELETE FROM _pending_rows WHERE partition IN ${list}; DELETE FROM _parquet_pending WHERE partition IN ${list}`);
        }
      });
      await c.run('DROP TABLE IF EXISTS _newest_day');
      return result;
    });
  }

  /** A store made before `_session_days` was kept (empty, or without a many-account key) builds it from its files' ids. */
  private async ensureDayIndex(): Promise<void> {
    const c = this.conn;
    const cols = await queryRows<{ c: string }>(c, "SELECT name AS c FROM pragma_table_info('main._session_days') WHERE name <> 'partition' ORDER BY cid");
    const keyed = cols.map((x) => x.c).join(', ') === this.shape.key;
    const n = Number((await queryRows<{ n: bigint }>(c, 'SELECT count(*) AS n FROM _session_days'))[0]?.n ?? 0);
    if (n > 0 && keyed) return;
    const days = await this.dataset.list();
    if (days.size === 0 && keyed) return;
    await inTransaction(c, async () => {
      await c.run(keyed ? 'DELETE FROM _session_days' : `DROP TABLE _session_days; ${sessionDaysDdl(this.shape)}`);
      for (const p of days.keys()) {
        const f = await this.dataset.read(p);
        if (!f) continue;
        try {
          // A many-account store's file made when it had one account has no account column: its rows were loaded as pending rows.
          if (!(await hasColumns(c, f.path, this.shape.accountColumns))) continue;
          await c.run(`INSERT INTO _session_days SELECT DISTINCT ${this.shape.key}, ${sqlString(p)} FROM read_parquet(${sqlString(f.path)})`);
        } finally {
          await f.done();
        }
      }
    }, (err) => wrapWriteError(err, 'indexing the days of the stored sessions'));
  }

  /** Writes the day's new file from its pending rows and `final` (its old file, read locally), and puts it in place. */
  private async rewriteWith(p: string, final: string | undefined): Promise<{ counts: AccountCounts; written: boolean }> {
    const c = this.conn;
    const { columnList, key, fileOrder } = this.shape;
    const tmp = join(this.layout.tmpDir, `${p}-${process.pid}-${++this.fileSeq}-${unguessable()}.parquet`);
    // A file of a single-account store made one of many has no account column: its rows were loaded as pending rows.
    const hasOld = final !== undefined && (await hasColumns(c, final, this.shape.accountColumns));
    // Sessions whose newest version is on another day (they moved) are left out of this day.
    const away = `(${key}) NOT IN (SELECT (${key}) FROM _newest_day WHERE partition <> ${sqlString(p)})`;
    const keep = ` WHERE ${this.shape.account()} NOT IN (SELECT account FROM _removed_accounts) AND ${away}`;
    const pending = `SELECT ${columnList}, 0 AS src FROM _pending_rows WHERE partition = ${sqlString(p)} AND ${away}`;
    const all = hasOld ? `${pending} UNION ALL SELECT ${columnList}, 1 AS src FROM read_parquet(${sqlString(final)})${keep}` : pending;
    // The newest version of each session; but a version of the old file with the same content as
    // the newest stays as it is (its extracted_at too): read again unchanged, it is not news.
    const source = hasOld
      ? `SELECT ${columnList} FROM (
           SELECT *, ${CONTENT_HASH} AS h, first_value(${CONTENT_HASH}) OVER (PARTITION BY ${key} ORDER BY extracted_at DESC, src) AS w FROM (${all}))
         QUALIFY row_number() OVER (PARTITION BY ${key} ORDER BY (src = 1 AND h = w) DESC, extracted_at DESC, src) = 1`
      : `SELECT ${columnList} FROM (${all}) QUALIFY row_number() OVER (PARTITION BY ${key} ORDER BY extracted_at DESC, src) = 1`;
    // Pending sessions by account: new, or replacing one the file held or one on another day (moved
    // here); updated when the content differs from the newest pending version, else unchanged.
    const account = this.shape.account('p');
    const newest = `SELECT ${key}, ${CONTENT_HASH} AS h FROM _pending_rows WHERE partition = ${sqlString(p)} AND ${away}
                    QUALIFY row_number() OVER (PARTITION BY ${key} ORDER BY extracted_at DESC) = 1`;
    const elsewhere = `SELECT DISTINCT ${key}, true AS moved FROM _newest_day WHERE partition = ${sqlString(p)} AND was IS NOT NULL`;
    const r = await queryRows<{ account: string; n: bigint; u: bigint; same: bigint }>(
      c,
      hasOld
        ? `WITH p AS (${newest}), o AS (SELECT ${key}, ${CONTENT_HASH} AS h FROM read_parquet(${sqlString(final!)})${keep}), m AS (${elsewhere})
           SELECT ${account} AS account, count(*) AS n, count(*) FILTER (WHERE o.h IS NOT NULL OR m.moved) AS u, count(*) FILTER (WHERE o.h = p.h) AS same
           FROM p LEFT JOIN o USING (${key}) LEFT JOIN m USING (${key}) GROUP BY 1`
        : `WITH p AS (${newest}), m AS (${elsewhere})
           SELECT ${account} AS account, count(*) AS n, count(m.moved) AS u, 0 AS same FROM p LEFT JOIN m USING (${key}) GROUP BY 1`,
    );
    const counts: AccountCounts = new Map(
      r.map((x) => [x.account, { inserted: Number(x.n) - Number(x.u), updated: Number(x.u) - Number(x.same), unchanged: Number(x.same) }]),
    );
    const news = [...counts.values()].some((n) => n.inserted > 0 || n.updated > 0);
    // Nothing new or changed and nothing marked (an account moved in or out of the day, or one moved out
    // waits to be left out): the old file stays (one missing, or without the account column, is always written).
    const marked = async () => {
      const sql = 'SELECT (SELECT count(*) FROM _parquet_pending WHERE partition = $1) + (SELECT count(*) FROM _removed_accounts) AS n';
      return Number((await queryRows<{ n: bigint }>(c, sql, [p]))[0]?.n ?? 0) > 0;
    };
    if (hasOld && !news && !(await marked())) return { counts, written: false };
    let copied: { rowsChanged: number | bigint };
    try {
      copied = await c.run(
        `COPY (${source} ORDER BY ${fileOrder}) TO ${sqlString(tmp)} (${parquetCopyOptions(this.rowGroupRows)})`,
      );
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw wrapWriteError(err, `rewriting Parquet partition date=${p}`);
    }
    await this.dataset.put(p, tmp, Number(copied.rowsChanged));
    return { counts, written: true };
  }
}

/** Whether a Parquet file has these columns (read from its footer; none asked: read nothing). */
async function hasColumns(c: DuckDBConnection, file: string, columns: readonly string[]): Promise<boolean> {
  if (!columns.length) return true;
  const r = await queryRows<{ n: bigint }>(c, `SELECT count(DISTINCT name) AS n FROM parquet_schema(${sqlString(file)}) WHERE name IN (SELECT unnest($1::VARCHAR[]))`, [listValue([...columns])]);
  return Number(r[0]?.n ?? 0) === columns.length;
}
