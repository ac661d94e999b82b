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
import { rmdir, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Window } from '../time/windows.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { CommitQueue, dropUncommittedFiles, type CommitResult, type WindowCommit } from './commit-queue.js';
import { compactCoverage, readCoverage, readCoverageSince } from './coverage.js';
import type { Db } from './duckdb.js';
import type { OutputFormat, StoreLayout } from './layout.js';
import { openDataDir, prepareDirs } from './open-data-dir.js';
import { ParquetOnlySink } from './parquet-only-sink.js';
import * as runLog from './run-log.js';
import { checkOwnership, ensureSchema, recordedFormat } from './schema.js';
import { SerialQueue } from './serial-queue.js';
import type { FlushResult, Sink } from './sink.js';
import { TableSink } from './table-sink.js';

export { checkWriterSettings, discardNew } from './open-data-dir.js';
export { SCHEMA_VERSION } from './schema.js';
export { completeDays } from './coverage.js';
export type { RunRow } from './run-log.js';
export type { CommitResult, WindowCommit } from './commit-queue.js';
export type { FlushResult, MergeResult } from './sink.js';

export interface OpenStoreOptions {
  dataDir: string;
  /** Absent: the data directory's own format (a new one: both). */
  format?: OutputFormat | undefined;
  readOnly?: boolean;
  /** The Parquet dataset's root, when not the data directory's own parquet/sessions (an account's: docs/accounts.md). */
  parquetDir?: string;
  /** Where a failure of background work (a merge or a Parquet rewrite overlapping the fetching) is reported when it happens. */
  logger?: Logger;
}

/** A WAL at least this large is checkpointed with every core when the store closes (see close). */
const PARALLEL_CHECKPOINT_WAL_BYTES = 16 * 2 ** 20;

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
   * Directories and files this writer created (its DuckDB file was new): what a first run that
   * commits nothing removes again (see discardNew). Empty when the store existed.
   */
  readonly created: string[] = [];

  /**
   * Opens the store, creating the data directory and schema when needed. Refuses a directory whose
   * DuckDB file belongs to another program, and a file held by another process.
   *
   * The format: a data directory keeps the one its first run recorded (`format` in
   * _session_etl_meta; before that was recorded, which files it holds). Without `format` the store
   * opens in that format (a new one: `both`); a `format` that differs from it is refused (exit 2):
   * a store written in another format would miss the history, and rewrite Parquet partitions from it.
   */
  static async open(opts: OpenStoreOptions): Promise<SessionStore> {
    const readOnly = opts.readOnly ?? false;
    const { db, layout, fileFormat, existed, created } = await openDataDir(opts.dataDir, opts.format, readOnly, opts.parquetDir);
    try {
      if (existed) await checkOwnership(db.conn, layout.dbPath);
      const format = existed ? await recordedFormat(db.conn, layout, fileFormat, opts.format) : fileFormat;
      const store = new SessionStore(layout, format, db, readOnly, opts.logger ?? silentLogger);
      store.created.push(...created);
      if (!readOnly) {
        if (existed) await prepareDirs(layout);
        await ensureSchema(db.conn, format, !existed);
        await CommitQueue.createStaging(db.conn);
        await dropUncommittedFiles(db.conn, layout.pendingDir);
      }
      return store;
    } catch (err) {
      await db.close().catch(() => {});
      throw err;
    }
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

  /** A connection of its own for reading the state while the run writes (the state snapshot). */
  async readConnection(): Promise<DuckDBConnection> {
    if (this.closed) throw new Error('the store is closed');
    if (!this.snapshotConn) {
      this.snapshotConn = await this.db.instance.connect();
      await this.snapshotConn.run("SET TimeZone = 'UTC'");
    }
    return this.snapshotConn;
  }
  private snapshotConn: DuckDBConnection | undefined;

  recordRun(run: runLog.RunRow): Promise<void> {
    return this.exclusive(() => runLog.recordRun(this.conn, run));
  }

  /** Records every run still marked `running` as `died` (see run-log.ts); returns their run ids. */
  recordDiedRuns(foundBy: string, holder?: { runId?: string; pid: number; host: string }): Promise<string[]> {
    return this.exclusive(() => runLog.recordDiedRuns(this.conn, foundBy, holder));
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
      // The checkpoint DuckDB would run while closing, here off the event loop; with every core when
      // the WAL is large. Starting DuckDB's extra threads costs ~14 ms of CPU, more than a small WAL's
      // checkpoint gains from them: many small accounts pay it once each (docs/benchmarks.md).
      const walBytes = (await stat(`${this.layout.dbPath}.wal`).catch(() => undefined))?.size ?? 0;
      if (walBytes >= PARALLEL_CHECKPOINT_WAL_BYTES && !this.db.shared) await this.conn.run(`SET threads = ${availableParallelism()}`).catch(() => {});
      await this.conn.run('CHECKPOINT').catch(() => {});
    }
    this.sink.closeConnections();
    this.snapshotConn?.closeSync();
    await this.db.close();
  }
}
