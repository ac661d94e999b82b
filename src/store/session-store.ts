/**
 * The load stage: one DuckDB file that holds the data (unless the format is parquet only), the
 * coverage map, the run history and the quarantine, plus the Parquet dataset derived from it.
 *
 * Exactly-once in effect: each window's rows and its coverage interval are committed in one DuckDB
 * transaction (commit-queue.ts). Committed rows then reach their final form through the format's
 * sink (sink.ts): merged into the `sessions` table, and Parquet partitions rewritten whole from
 * committed data (write to .tmp, fsync, rename over the old file) and removed from the pending
 * list; a crash in between leaves them pending, and the next run's first flush finishes them.
 *
 * This file is the facade the pipeline, `status` and the tests use; each concern lives in its own
 * module: open-data-dir.ts (checks before anything is written), schema.ts (tables, migration),
 * commit-queue.ts, table-sink.ts / parquet-only-sink.ts, merge.ts, parquet-rewriter.ts,
 * background-work.ts, coverage.ts, run-log.ts, durable-fs.ts.
 */
import { rmdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Window } from '../time/windows.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { CommitQueue, dropUncommittedFiles, type CommitResult, type WindowCommit } from './commit-queue.js';
import { compactCoverage, readCoverage, readCoverageSince } from './coverage.js';
import type { Db } from './duckdb.js';
import { layoutOf, type OutputFormat, type StoreLayout } from './layout.js';
import { openDataDir, prepareDirs } from './open-data-dir.js';
import { ParquetOnlySink } from './parquet-only-sink.js';
import * as runLog from './run-log.js';
import { checkOwnership, ensureSchema } from './schema.js';
import { SerialQueue } from './serial-queue.js';
import type { FlushResult, Sink } from './sink.js';
import { TableSink } from './table-sink.js';

export { checkWriterSettings } from './open-data-dir.js';
export { SCHEMA_VERSION } from './schema.js';
export { completeDays } from './coverage.js';
export type { RunRow } from './run-log.js';
export type { CommitResult, WindowCommit } from './commit-queue.js';
export type { FlushResult, MergeResult } from './sink.js';

export interface OpenStoreOptions {
  dataDir: string;
  format: OutputFormat;
  readOnly?: boolean;
  /** Where a failure of background work (a merge or a Parquet rewrite overlapping the fetching) is reported when it happens. */
  logger?: Logger;
}

export class SessionStore {
  /** Writes on the one main connection. */
  private readonly writes = new SerialQueue();
  private readonly sink: Sink;
  private readonly commits: CommitQueue;
  private closed = false;

  private constructor(
    readonly layout: StoreLayout,
    readonly format: OutputFormat,
    private readonly db: Db,
    readonly readOnly: boolean,
    logger: Logger,
  ) {
    this.sink =
      format === 'parquet'
        ? new ParquetOnlySink(db.conn, this.writes, layout)
        : new TableSink(db, layout, format === 'both', (err) =>
            logger.warn(
              { err: err instanceof Error ? err.message : String(err) },
              'background merge or Parquet rewrite failed; the flush at the end of the run tries again',
            ),
          );
    this.commits = new CommitQueue(db.conn, this.writes, layout, this.sink);
  }

  get conn(): DuckDBConnection {
    return this.db.conn;
  }

  /**
   * Opens the store, creating the data directory and schema when needed. Refuses a directory whose
   * DuckDB file belongs to another program, and a file held by another process.
   */
  static async open(opts: OpenStoreOptions): Promise<SessionStore> {
    const layout = layoutOf(opts.dataDir, opts.format);
    const readOnly = opts.readOnly ?? false;
    const { db, existed } = await openDataDir(layout, opts.format, readOnly);
    const store = new SessionStore(layout, opts.format, db, readOnly, opts.logger ?? silentLogger);
    try {
      if (existed) await checkOwnership(db.conn, layout.dbPath);
      if (!readOnly) {
        if (existed) await prepareDirs(layout);
        await ensureSchema(db.conn, opts.format);
        await CommitQueue.createStaging(db.conn);
        await dropUncommittedFiles(db.conn, layout.pendingDir);
      }
    } catch (err) {
      db.close();
      throw err;
    }
    return store;
  }

  /** Serialises writes on the one connection. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.writes.run(fn);
  }

  /** The merged coverage map: windows whose data is committed. */
  coverage(conn: DuckDBConnection = this.conn): Promise<Window[]> {
    return readCoverage(conn);
  }

  /** Coverage committed after `sinceMs` (used to resume an interrupted backfill). */
  coverageSince(sinceMs: number): Promise<Window[]> {
    return readCoverageSince(this.conn, sinceMs);
  }

  /** Commits one window with its data (see commit-queue.ts); rows reach the table or dataset when merged. */
  commitWindow(commit: WindowCommit): Promise<CommitResult> {
    return this.commits.commitWindow(commit);
  }

  /** Marks the start of a run for the new/updated counts (see TableSink.beginRunCounts). */
  beginRunCounts(): Promise<void> {
    return this.sink.beginRunCounts();
  }

  /** Partitions whose Parquet file is older than the committed data. */
  pendingPartitions(conn: DuckDBConnection = this.conn): Promise<string[]> {
    return this.sink.pendingPartitions(conn);
  }

  /**
   * Makes committed data visible in its final form: merges every committed row into the sessions
   * table (formats duckdb and both), then rewrites every pending Parquet partition whole: query →
   * .tmp file → fsync → rename over the old file → fsync the directory → clear the pending mark.
   * Readers only ever see complete files. Also returns what background merges did since the last flush.
   */
  flush(): Promise<FlushResult> {
    return this.sink.flush();
  }

  /** Replaces the coverage rows by their merged intervals (keeps the table small). */
  compactCoverage(): Promise<void> {
    return this.exclusive(() => compactCoverage(this.conn));
  }

  recordRun(run: runLog.RunRow): Promise<void> {
    return this.exclusive(() => runLog.recordRun(this.conn, run));
  }

  lastRuns(limit = 10): Promise<Record<string, unknown>[]> {
    return runLog.lastRuns(this.conn, limit);
  }

  /** The unfinished backfill of exactly this range, if any (to resume it). */
  openBackfill(range: Window): Promise<{ startedAtMs: number } | undefined> {
    return runLog.openBackfill(this.conn, range);
  }

  beginBackfill(range: Window, runId: string): Promise<void> {
    return this.exclusive(() => runLog.beginBackfill(this.conn, range, runId));
  }

  completeBackfill(range: Window): Promise<void> {
    return this.exclusive(() => runLog.completeBackfill(this.conn, range));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.sink.stop();
    await this.writes.idle();
    await this.sink.idle();
    this.closed = true;
    if (!this.readOnly) {
      await rmdir(this.layout.pendingDir).catch(() => {});
      // The checkpoint DuckDB would run while closing, here with every core and off the event loop.
      await this.conn.run(`SET threads = ${availableParallelism()}`).catch(() => {});
      await this.conn.run('CHECKPOINT').catch(() => {});
    }
    this.sink.closeConnections();
    this.db.close();
  }
}
