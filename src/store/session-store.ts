/**
 * The load stage's facade: one DuckDB file (data unless format parquet, coverage, runs, quarantine)
 * plus the Parquet dataset. Each window's rows and coverage commit in one transaction
 * (commit-queue.ts); the format's sink (sink.ts) then merges them into `sessions` and rewrites
 * Parquet days whole; a crash in between leaves them pending for the next flush (docs/design.md).
 */
import { rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Window } from '../time/windows.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { convertToManyAccounts, importAccount, movedKey, removeAccounts, type TransferSource } from './account-transfer.js';
import { CommitQueue, dropUncommittedFiles, type CommitResult, type WindowCommit } from './commit-queue.js';
import { compactCoverage, completeDays, readAllCoverage, readCoverage, readCoverageSince } from './coverage.js';
import { queryRows, type Db } from './duckdb.js';
import { DataDirError } from './errors.js';
import type { OutputFormat, ShardId, StoreLayout } from './layout.js';
import { openDataDir, prepareDirs } from './open-data-dir.js';
import { ParquetOnlySink } from './parquet-only-sink.js';
import { REWRITE_CONNECTIONS } from './parquet-rewriter.js';
import * as runLog from './run-log.js';
import { checkOwnership, ensureSchema, readAsCurrentSchema, recordedAccounts, recordedFormat, type SchemaReading, type StoreAccounts } from './schema.js';
import { SerialQueue } from './serial-queue.js';
import type { Dataset } from './dataset/dataset.js';
import type { DatasetLocation } from './dataset/location.js';
import { openDataset } from './dataset/open-dataset.js';
import { storeShape, type StoreShape } from './shape.js';
import type { FlushResult, Sink } from './sink.js';
import { TableSink } from './table-sink.js';
import { readVolumeAnomalies } from './read-volume-anomalies.js';
import { removeSessions } from './remove-sessions.js';
import { recordVerifiedDays, type VerifiedDay } from './verify-log.js';
import type { VolumeAnomaly, VolumeRule } from './volume-anomalies.js';

export { checkWriterSettings, discardNew } from './open-data-dir.js';
export { SCHEMA_VERSION } from './schema.js';
export { completeDays } from './coverage.js';
export type { RunRow } from './run-log.js';
export type { CommitResult, WindowCommit } from './commit-queue.js';
export type { TransferSource } from './account-transfer.js';
export type { AccountCounts, FlushResult, MergeResult } from './sink.js';
export type { StoreAccounts } from './schema.js';
export { SINGLE_ACCOUNT } from './shape.js';

export interface OpenStoreOptions {
  dataDir: string;
  /** Absent: the data directory's own format (a new one: both). */
  format?: OutputFormat | undefined;
  readOnly?: boolean;
  /** Absent: whichever the store is (a new one: single); one that differs is refused (exit 2; docs/accounts.md). */
  accounts?: StoreAccounts;
  /** Shard I of N of a many-account data directory: its own store (layout.ts). */
  shard?: ShardId;
  /** Where the day files go: the data directory's parquet/sessions/ (default), or a bucket (dataset/). */
  dataset?: DatasetLocation;
  /** A bucket's check before each upload that the run still holds its lock (dataset/bucket-run.ts). */
  beforeUpload?: () => Promise<void>;
  /** Where a failure of background work (a merge or a Parquet rewrite) is reported when it happens. */
  logger?: Logger;
  /** A writer's DuckDB memory_limit and row group bytes (the memory budget's shares: config/memory-budget.ts). */
  memoryLimit?: string;
  rowGroupBytes?: number;
  /** Directories besides the data directory its DuckDB may read files in (status reads a dataset kept elsewhere). */
  readDirs?: readonly string[];
  /** How long committed rows wait for a whole row group before a background merge takes them anyway (default 4 s; tests set it). */
  alignedWaitMs?: number;
  /** Parquet rewrites side by side at most (the run's memory budget's: config/memory-budget.ts; default 2). */
  parquetRewrites?: number;
}

export class SessionStore {
  private readonly writes = new SerialQueue();
  private readonly sink: Sink;
  private readonly commits: CommitQueue;
  private closed = false;
  /** The accounts whose runs are going (see readyDays). */
  private running: readonly string[] = [];
  readonly shape: StoreShape;

  private constructor(
    readonly layout: StoreLayout,
    readonly format: OutputFormat,
    readonly accounts: StoreAccounts,
    private readonly db: Db,
    readonly readOnly: boolean,
    logger: Logger,
    readonly dataset: Dataset,
    alignedWaitMs?: number,
    parquetRewrites = REWRITE_CONNECTIONS,
  ) {
    this.shape = storeShape(accounts);
    this.sink =
      format === 'parquet'
        ? new ParquetOnlySink(db.conn, this.writes, layout, this.shape, dataset, db.rowGroupRows)
        : new TableSink(db, layout, this.shape, dataset, {
            format,
            readyDays: (conn, partitions) => this.readyDays(conn, partitions),
            onBackgroundError: (err) =>
              logger.warn(
                { err: err instanceof Error ? err.message : String(err) },
                'background merge or Parquet rewrite failed; the flush at the end of the run tries again',
              ),
            alignedWaitMs,
            onRewritten: (partitions) => logger.debug({ partitions }, 'finished days written to Parquet while fetching'),
            rewrites: { sideBySide: parquetRewrites, log: (fields, msg) => logger.debug(fields, msg) },
            checkpointFirst: accounts === 'many',
            log: (fields, msg) => logger.debug(fields, msg),
          });
    this.commits = new CommitQueue(db.conn, this.writes, layout, this.sink);
  }

  get conn(): DuckDBConnection {
    return this.db.conn;
  }

  get rowGroupRows(): number {
    return this.db.rowGroupRows;
  }

  /** What this writer created (its DuckDB file was new): a first run that commits nothing removes it (discardNew). */
  readonly created: string[] = [];

  /**
   * Opens the store, creating the data directory and schema when needed; refuses another program's
   * DuckDB file, and a file held by another process. A data directory keeps the format its first run
   * recorded (a new one: both); another `format` is refused (exit 2: it would miss the history).
   */
  static async open(opts: OpenStoreOptions): Promise<SessionStore> {
    const readOnly = opts.readOnly ?? false;
    const { db, layout, fileFormat, existed, created } = await openDataDir(opts.dataDir, opts.format, readOnly, opts.shard, opts.memoryLimit, opts.readDirs, opts.rowGroupBytes);
    try {
      if (existed) await checkOwnership(db.conn, layout.dbPath);
      const format = existed ? await recordedFormat(db.conn, layout, fileFormat, opts.format) : fileFormat;
      const accounts = existed ? await recordedAccounts(db.conn) : (opts.accounts ?? 'single');
      if (opts.accounts && opts.accounts !== accounts) throw accountsMismatch(layout, accounts);
      const dataset = await openDataset(opts.dataset ?? { kind: 'local', root: layout.parquetDir }, layout, opts.beforeUpload);
      const store = new SessionStore(layout, format, accounts, db, readOnly, opts.logger ?? silentLogger, dataset, opts.alignedWaitMs, opts.parquetRewrites);
      store.created.push(...created);
      // A reader of a store of an earlier schema sees it as this one's, without writing (schema.ts).
      if (readOnly && existed) store.schemaReading = await readAsCurrentSchema(db.conn, format, accounts);
      if (!readOnly) {
        if (existed) await prepareDirs(layout);
        await ensureSchema(db.conn, { format, accounts, newFile: !existed });
        await dropUncommittedFiles(db.conn, layout.pendingDir);
        await store.commits.adoptPendingRows(store.shape);
      }
      return store;
    } catch (err) {
      await db.close().catch(() => {});
      throw err;
    }
  }

  /** A read-only store's schema: whether it is older than this release's (the next writer upgrades it). */
  schemaReading: SchemaReading | null = null;

  /** Runs `fn` on the main connection between two writes (a consistent copy of the state: dataset/bucket-run.ts). */
  withWriteConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.writes.run(() => fn(this.conn));
  }

  /** An account's merged coverage map: windows whose data is committed ('' in a single-account store). */
  coverage(account: string, conn?: DuckDBConnection): Promise<Window[]> {
    return readCoverage(conn ?? this.conn, account);
  }

  /** Every account's merged coverage map. */
  allCoverage(conn?: DuckDBConnection): Promise<Map<string, Window[]>> {
    return readAllCoverage(conn ?? this.conn);
  }

  /** An account's coverage committed after `sinceMs` (used to resume an interrupted backfill). */
  coverageSince(account: string, sinceMs: number): Promise<Window[]> {
    return readCoverageSince(this.conn, account, sinceMs);
  }

  /** The accounts the store holds anything of (coverage, runs), sorted. */
  async accountNames(conn: DuckDBConnection = this.conn): Promise<string[]> {
    const rows = await queryRows<{ a: string }>(conn, 'SELECT account AS a FROM _coverage UNION SELECT account FROM _runs ORDER BY 1');
    return rows.map((r) => r.a);
  }

  /** The accounts whose runs are going: a day is rewritten while fetching once all cover it (else once per account). */
  setRunningAccounts(accounts: readonly string[]): void {
    this.running = [...accounts];
  }

  private async readyDays(conn: DuckDBConnection, partitions: string[]): Promise<string[]> {
    if (partitions.length === 0) return [];
    const coverage = await readAllCoverage(conn);
    const accounts = this.running.length ? this.running : [...coverage.keys()];
    let ready = partitions;
    for (const a of accounts) ready = completeDays(ready, coverage.get(a) ?? []);
    return ready;
  }

  /** Commits one window with its data (see commit-queue.ts); rows reach the table or dataset when merged. */
  commitWindow(commit: WindowCommit): Promise<CommitResult> {
    return this.commits.commitWindow(commit);
  }

  /** Copies an account's rows and state from another store into this one (account-transfer.ts), then flushes. */
  async importAccount(account: string, src: TransferSource): Promise<number> {
    const rows = await this.writes.run(() => importAccount(this.conn, this.shape, this.format, account, src, () => this.sink.nextGen(this.conn)));
    await this.flush();
    return rows;
  }

  /**
   * Removes accounts moved to another store, and rewrites the days they were in without them
   * (`filesGlob`: a local copy of the store's day files when they are in a bucket).
   */
  async removeAccounts(accounts: readonly string[], filesGlob = join(this.layout.parquetDir, 'date=*', this.layout.partitionFile)): Promise<void> {
    await this.flush();
    await this.writes.run(() => removeAccounts(this.conn, this.format, accounts, () => this.sink.nextGen(this.conn), filesGlob));
    await this.flush();
  }

  /**
   * Makes this single-account store a many-account store holding it (`accounts adopt`); open it again
   * as such and flush: every day file is rewritten with the account column.
   */
  async convertToMany(account: string): Promise<void> {
    if (this.shape.many) throw new DataDirError(`${this.layout.dbPath} holds many accounts already`);
    await this.flush();
    await this.writes.run(() =>
      convertToManyAccounts(this.conn, this.format, account, () => this.sink.nextGen(this.conn), join(this.layout.parquetDir, 'date=*', this.layout.partitionFile)),
    );
  }

  /** Where an account was moved from into this store, if it was (account-transfer.ts). */
  async movedFrom(account: string): Promise<string | undefined> {
    const r = await queryRows<{ value: string }>(this.conn, 'SELECT value FROM _session_etl_meta WHERE key = $1', [movedKey(account)]);
    return r[0]?.value;
  }

  /** Each account's volume anomalies as the store stands (read-volume-anomalies.ts). */
  volumeAnomalies(rule: VolumeRule, conn: DuckDBConnection = this.conn): Promise<Map<string, VolumeAnomaly[]>> {
    return readVolumeAnomalies(conn, this, rule);
  }

  /** Marks the start of a run for the new/updated counts (see TableSink.beginRunCounts). */
  async beginRunCounts(): Promise<void> {
    await this.sink.beginRunCounts?.();
  }

  pendingPartitions(conn: DuckDBConnection = this.conn): Promise<string[]> {
    return this.sink.pendingPartitions(conn);
  }

  /** Makes committed data visible in its final form (sink.ts); also returns what background merges did since the last flush. */
  flush(): Promise<FlushResult> {
    return this.sink.flush();
  }

  /** Replaces the coverage rows by their merged intervals (keeps the table small). */
  compactCoverage(): Promise<void> {
    return this.writes.run(() => compactCoverage(this.conn));
  }

  /** A new connection (UTC) for temporary tables beside the run's writes (range-comparison.ts); the caller closes it. */
  async openConnection(): Promise<DuckDBConnection> {
    if (this.closed) throw new Error('the store is closed');
    return this.db.instance.connect();
  }

  /** Removes an account's sessions (those stored on `days`) and rewrites those days (remove-sessions.ts). Returns how many went. */
  removeSessions(account: string, ids: readonly string[], days: readonly string[]): Promise<number> {
    return this.writes.run(() => removeSessions(this.conn, this, account, ids, days, (c) => this.sink.nextGen(c)));
  }

  /** Records what a verify found, day by day (verify-log.ts). */
  recordVerifiedDays(account: string, runId: string, atS: number, days: readonly VerifiedDay[]): Promise<void> {
    return this.writes.run(() => recordVerifiedDays(this.conn, account, runId, atS, days));
  }

  /** A connection of its own for reading the state while the run writes (the state snapshot). */
  async readConnection(): Promise<DuckDBConnection> {
    if (this.closed) throw new Error('the store is closed');
    this.snapshotConn ??= await this.db.instance.connect();
    return this.snapshotConn;
  }
  private snapshotConn: DuckDBConnection | undefined;

  recordRun(run: runLog.RunRow): Promise<void> {
    return this.writes.run(() => runLog.recordRun(this.conn, run));
  }

  /** Records every run still marked `running` as `died` (see run-log.ts); returns their run ids. */
  recordDiedRuns(foundBy: string, holder?: { runId?: string; pid: number; host: string }): Promise<string[]> {
    return this.writes.run(() => runLog.recordDiedRuns(this.conn, foundBy, holder, runLog.committedRowsOf(this)));
  }

  /** The latest runs of an account (every account's with `account` undefined), newest first. */
  lastRuns(limit = 10, account?: string): Promise<Record<string, unknown>[]> {
    return runLog.lastRuns(this.conn, limit, account);
  }

  /** The latest `limit` runs of each account, newest first. */
  lastRunsByAccount(limit = 10): Promise<Record<string, unknown>[]> {
    return runLog.lastRunsByAccount(this.conn, limit);
  }

  /** The account's unfinished backfill of exactly this range, if any (to resume it). */
  openBackfill(account: string, range: Window): Promise<{ startedAtMs: number } | undefined> {
    return runLog.openBackfill(this.conn, account, range);
  }

  beginBackfill(account: string, range: Window, runId: string): Promise<void> {
    return this.writes.run(() => runLog.beginBackfill(this.conn, account, range, runId));
  }

  completeBackfill(account: string, range: Window): Promise<void> {
    return this.writes.run(() => runLog.completeBackfill(this.conn, account, range));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.sink.stop?.();
    await this.writes.idle();
    await this.sink.idle?.();
    this.closed = true;
    if (!this.readOnly) {
      await rmdir(this.layout.pendingDir).catch(() => {});
      // DuckDB's closing checkpoint, here off the event loop (one thread was about even with every
      // core: docs/benchmarks.md, "polling for tasks").
      await this.conn.run('CHECKPOINT').catch(() => {});
    }
    this.sink.closeConnections?.();
    this.snapshotConn?.closeSync();
    this.dataset.close();
    await this.db.close();
  }
}

/** A store of one account opened as many accounts' store, or the other way round (exit 2). */
function accountsMismatch(layout: StoreLayout, recorded: StoreAccounts): DataDirError {
  return recorded === 'many'
    ? new DataDirError(
        `data directory ${layout.dataDir} holds many accounts (${layout.dbPath} has an account column), and the configuration has no ` +
          'accounts map: give the configuration file with the accounts (--config), or another --data-dir',
      )
    : new DataDirError(
        `data directory ${layout.dataDir} holds single-account data (${layout.dbPath}) and the configuration has accounts: make it ` +
          'one of them with `session-etl accounts adopt NAME` (no fetching again; docs/accounts.md), or give the accounts another dataDir',
      );
}
