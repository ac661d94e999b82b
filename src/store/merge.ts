/**
 * Moving committed rows from the pending record files (and rows the precise path staged) into the
 * `sessions` table, one bounded slice per transaction.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { crashPoint } from '../util/crash-point.js';
import { queryRows, sqlString } from './duckdb.js';
import { wrapWriteError } from './errors.js';
import { NDJSON_COLUMNS, NDJSON_SELECT } from './ndjson.js';
import { COLUMN_LIST, PARTITION_OF_STORED } from './schema.js';
import type { MergeResult } from './sink.js';

/**
 * Most rows one merge takes from the pending files (more than one DuckDB row group, 122,880 rows,
 * so that DuckDB writes full row groups straight to the file instead of through the WAL). Merges
 * run in the background while windows are fetched (docs/benchmarks.md).
 */
const SLICE_ROWS = 131_072;

export interface MergeContext {
  pendingDir: string;
  /** Format both: mark the partitions a merge touched for a Parquet rewrite. */
  withParquet: boolean;
  /** The highest row id of `sessions` when the run began (see TableSink.beginRunCounts). */
  runRowidFloor: bigint | undefined;
  /** A generation number for Parquet marks, above every one already stored. */
  nextGen(c: DuckDBConnection): Promise<bigint>;
}

/**
 * One bounded merge, one transaction: appends at most SLICE_ROWS rows of the oldest pending files
 * (plus any rows the precise path staged) to the sessions table straight from read_json (no
 * intermediate copy, no sort: the files are read in window order, and each is sorted by start),
 * then keeps one row per session: among the versions of each session id the slice brought, the
 * newest extracted_at wins (ties: the row just fetched); the others are deleted. The partitions
 * touched (the new rows' days and the days of the versions they replace) are marked for a Parquet
 * rewrite and the files forgotten, in the same transaction. Memory is bounded by the slice and
 * DuckDB's memory limit, never by the history. Runs on its own connection, so windows keep
 * committing meanwhile: the snapshot of this transaction decides which files and staged rows it takes.
 */
export async function mergeSlice(c: DuckDBConnection, ctx: MergeContext): Promise<MergeResult & { more: boolean }> {
  const none = { inserted: 0, updated: 0, more: false };
  await c.run('BEGIN TRANSACTION');
  let paths: string[] = [];
  try {
    const files = await queryRows<{ file: string; extracted_at: number; rows: bigint | number }>(
      c,
      'SELECT file, extracted_at, rows FROM _pending_files ORDER BY file',
    );
    const staged = Number((await queryRows<{ n: bigint }>(c, 'SELECT count(*) AS n FROM _pending_rows'))[0]?.n ?? 0);
    if (files.length === 0 && staged === 0) {
      await c.run('ROLLBACK');
      return none;
    }
    let take = 0;
    let rows = staged;
    while (take < files.length && (take === 0 || rows + Number(files[take]!.rows) <= SLICE_ROWS)) rows += Number(files[take++]!.rows);
    const slice = files.slice(0, take);
    paths = slice.map((f) => join(ctx.pendingDir, f.file));
    const sources = [
      ...(slice.length
        ? [
            `SELECT ${NDJSON_SELECT} FROM read_json([${paths.map(sqlString).join(', ')}], columns = ${NDJSON_COLUMNS},
               format = 'newline_delimited', filename = true) r
             JOIN (VALUES ${paths.map((p, i) => `(${sqlString(p)}, ${slice[i]!.extracted_at})`).join(', ')}) f(filename, extracted) USING (filename)`,
          ]
        : []),
      ...(staged ? [`SELECT * FROM _pending_rows`] : []),
    ];
    // Rows appended by this transaction are the ones above the highest row id it saw before
    // (DuckDB numbers a transaction's own rows after every committed one); checked below.
    const before = BigInt((await queryRows<{ m: bigint }>(c, 'SELECT coalesce(max(rowid), -1) AS m FROM sessions'))[0]?.m ?? -1n);
    const added = Number((await c.run(`INSERT INTO sessions SELECT ${COLUMN_LIST} FROM (${sources.join(' UNION ALL ')})`)).rowsChanged);
    const seen = Number((await queryRows<{ n: bigint }>(c, `SELECT count(*) AS n FROM sessions WHERE rowid > ${before}`))[0]?.n ?? 0);
    if (seen !== added) throw new Error(`internal check failed: appended ${added} rows, found ${seen} above row id ${before}`);
    // Every version of the sessions this slice brought (narrow: ids, times, row ids).
    await c.run(
      `CREATE OR REPLACE TEMP TABLE _versions AS
       SELECT s.rowid AS rid, s.rowid > ${before} AS fresh, s.session_id, s.extracted_at, ${PARTITION_OF_STORED.replace('started_at', 's.started_at')} AS p
       FROM sessions s WHERE s.session_id IN (SELECT session_id FROM sessions WHERE rowid > ${before})`,
    );
    // Stored versions at or below the run's first row id were there before the run: replacing one
    // is an update. One stored by this run (a session two windows returned) was counted already.
    const floor = ctx.runRowidFloor ?? (1n << 62n);
    const losers = await queryRows<{ fresh: boolean; older: boolean; p: string; n: bigint; ids: bigint }>(
      c,
      `CREATE OR REPLACE TEMP TABLE _losers AS
       SELECT rid, fresh, p, session_id FROM _versions
       WHERE session_id IN (SELECT session_id FROM _versions GROUP BY 1 HAVING count(*) > 1)
       QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY extracted_at DESC, fresh DESC, rid DESC) > 1;
       SELECT fresh, rid <= ${floor} AS older, p, count(*) AS n, count(DISTINCT session_id) AS ids FROM _losers GROUP BY ALL`,
    );
    let freshLost = 0;
    let updated = 0;
    let again = 0;
    const touched = new Set<string>();
    for (const l of losers) {
      if (l.fresh) freshLost += Number(l.n);
      else {
        if (l.older) updated += Number(l.ids);
        else again += Number(l.ids);
        touched.add(l.p);
      }
    }
    if (losers.length) await c.run('DELETE FROM sessions WHERE rowid IN (SELECT rid FROM _losers)');
    const inserted = added - freshLost - updated - again;
    if (ctx.withParquet) {
      for (const r of await queryRows<{ p: string }>(c, 'SELECT DISTINCT p FROM _versions WHERE fresh')) touched.add(r.p);
      if (touched.size) {
        await c.run(`INSERT INTO _parquet_pending SELECT unnest($1::VARCHAR[]), $2`, [listValue([...touched]), await ctx.nextGen(c)]);
      }
    }
    await c.run('DROP TABLE _versions; DROP TABLE _losers');
    if (staged) await c.run('DELETE FROM _pending_rows');
    if (slice.length) await c.run(`DELETE FROM _pending_files WHERE file IN (SELECT unnest($1::VARCHAR[]))`, [listValue(slice.map((f) => f.file))]);
    crashPoint('mid-merge');
    await c.run('COMMIT');
    crashPoint('after-merge');
    for (const p of paths) await rm(p, { force: true });
    return { inserted, updated, more: take < files.length };
  } catch (err) {
    await c.run('ROLLBACK').catch(() => {});
    await c.run('DROP TABLE IF EXISTS _versions; DROP TABLE IF EXISTS _losers').catch(() => {});
    throw wrapWriteError(err, 'merging committed rows into the sessions table');
  }
}
