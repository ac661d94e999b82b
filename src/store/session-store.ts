/**
 * The load stage: one DuckDB file that holds the data (unless the format is parquet only), the
 * coverage map, the run history and the quarantine, plus the Parquet dataset derived from it.
 *
 * Exactly-once in effect: each window's rows, its coverage interval and the list of Parquet
 * partitions it touched are committed in one DuckDB transaction. Parquet partitions are then
 * rewritten whole from committed data (write to .tmp, fsync, rename over the old file) and
 * removed from the pending list; a crash in between leaves them pending, and the next open
 * rewrites them. With format `parquet`, the rows wait in `_pending_rows` (committed with their
 * coverage) until the partition rewrite merges them into the dataset.
 */
import { mkdir, open, readdir, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { DuckDBDataChunk, BOOLEAN, DOUBLE, VARCHAR, listValue, type DuckDBType, type DuckDBConnection } from '@duckdb/node-api';
import type { RowBatch, RejectedRecord } from './rows.js';
import { crashPoint } from '../util/crash-point.js';
import { mergeIntervals } from '../time/intervals.js';
import { redact } from '../util/redact.js';
import { describeWindow, type Window } from '../time/windows.js';
import { SESSION_COLUMNS, sessionsTableDdl } from './contract.js';
import { openDb, queryRows, sqlString, type Db } from './duckdb.js';
import { NDJSON_COLUMNS, NDJSON_SELECT } from './ndjson.js';
import { DataDirError, StoreBusyError, StoreSettingError, StoreWriteError } from './errors.js';
import { layoutOf, NULL_PARTITION, PARTITION_FILE, partitionDir, type OutputFormat, type StoreLayout } from './layout.js';

/** 2: the sessions table has no PRIMARY KEY index (one row per session is kept by the merge). */
export const SCHEMA_VERSION = 2;
const CHUNK_ROWS = 2048;
/**
 * Most rows one merge takes from the pending files (more than one DuckDB row group, 122,880 rows,
 * so that DuckDB writes full row groups straight to the file instead of through the WAL). Merges
 * run in the background while windows are fetched (docs/benchmarks.md).
 */
const SLICE_ROWS = 131_072;
/** Most windows committed in one transaction. */
const MAX_GROUP = 64;
/**
 * DuckDB's memory limit for a writer (SESSION_ETL_DUCKDB_MEMORY_LIMIT, default 256MB). Without one,
 * DuckDB keeps every block it reads or writes cached up to 80 % of the machine, so a run's memory
 * grew with the history. Measured (docs/benchmarks.md): 256MB costs a 1 M-session backfill no time;
 * 160MB made it ~40 % slower; 128MB ran out of memory in a merge. Readers keep DuckDB's default.
 */
const WRITER_MEMORY_LIMIT = process.env.SESSION_ETL_DUCKDB_MEMORY_LIMIT || '256MB';

/** Refuses a writer setting from the environment that is not valid (before anything is created). */
export function checkWriterSettings(): void {
  if (!/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(WRITER_MEMORY_LIMIT.trim())) {
    throw new StoreSettingError(
      `SESSION_ETL_DUCKDB_MEMORY_LIMIT is ${JSON.stringify(WRITER_MEMORY_LIMIT)}: give an amount such as 256MB or 1GB, or unset it (default 256MB)`,
    );
  }
}

/**
 * DuckDB worker threads of a writer while it runs. A run keeps several statements going at once (a
 * merge, two Parquet COPYs, commits, besides the fetching); with DuckDB's default (one per core)
 * they fought over the two cores: the 1 M backfill used 26-31 core-seconds, and 20-25 with one
 * thread, in less time (docs/benchmarks.md). The checkpoint when the store closes gets every core.
 */
const WRITER_THREADS = 1;

/** Connections that rewrite Parquet partitions side by side (each COPY is mostly one thread plus fixed costs). */
const REWRITE_CONNECTIONS = 2;

const STATE_DDL = [
  `CREATE TABLE IF NOT EXISTS _session_etl_meta (key VARCHAR PRIMARY KEY, value VARCHAR)`,
  `CREATE TABLE IF NOT EXISTS _coverage (start_s BIGINT NOT NULL, end_s BIGINT NOT NULL, run_id VARCHAR, committed_at TIMESTAMPTZ NOT NULL)`,
  // One row per mark: a merge adds (partition, generation); a rewrite removes the marks it saw before
  // its COPY, so a merge that lands during the rewrite leaves its mark (see rewritePending).
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
  `CREATE TABLE IF NOT EXISTS _backfills (
     range_from BIGINT, range_to BIGINT, run_id VARCHAR, started_at TIMESTAMPTZ, completed_at TIMESTAMPTZ)`,
];

/** Staging columns: numbers and timestamps travel as DOUBLE (no BigInt per value), converted in SQL. */
const STAGING_TYPES: DuckDBType[] = SESSION_COLUMNS.map((c) =>
  c.type === 'VARCHAR' ? VARCHAR : c.type === 'BOOLEAN' ? BOOLEAN : DOUBLE,
);
const STAGING_DDL = `CREATE TEMP TABLE IF NOT EXISTS _staging (${SESSION_COLUMNS.map(
  (c, i) => `${c.name} ${STAGING_TYPES[i] === VARCHAR ? 'VARCHAR' : STAGING_TYPES[i] === BOOLEAN ? 'BOOLEAN' : 'DOUBLE'}`,
).join(', ')})`;
const STAGING_SELECT = SESSION_COLUMNS.map((c) =>
  c.type === 'TIMESTAMPTZ' ? `to_timestamp(${c.name}) AS ${c.name}` : c.type === 'BIGINT' ? `CAST(${c.name} AS BIGINT) AS ${c.name}` : c.name,
).join(', ');
const PARTITION_OF_STAGED = `COALESCE(strftime(to_timestamp(started_at), '%Y-%m-%d'), '${NULL_PARTITION}')`;
const PARTITION_OF_STORED = `COALESCE(strftime(started_at, '%Y-%m-%d'), '${NULL_PARTITION}')`;
const COLUMN_LIST = SESSION_COLUMNS.map((c) => c.name).join(', ');

export interface WindowCommit {
  window: Window;
  /** Rows validated and flattened in JavaScript (a body that left the scanner's fast path). */
  batch?: RowBatch;
  /** Records as newline-delimited JSON, every one already checked (reporting/sessions-body.ts): DuckDB parses them. */
  ndjson?: { bytes: Buffer; count: number; /** epoch seconds */ extractedAt: number };
  rejected: readonly RejectedRecord[];
  runId: string;
}

/** A window in the commit queue: its NDJSON already written to a file under .tmp/. */
interface QueuedCommit {
  window: Window;
  batch?: RowBatch;
  file?: { path: string; count: number; extractedAt: number };
  rejected: readonly RejectedRecord[];
  runId: string;
}

export interface CommitResult {
  /** Rows committed (to _pending_rows: counted as new or updated when they are merged). */
  written: number;
}

export interface MergeResult {
  /** Sessions new to the table / replacing a stored version. */
  inserted: number;
  updated: number;
}

export interface FlushResult {
  partitions: string[];
  /** Sessions new to the table or dataset / replacing a stored version (merged by this flush). */
  inserted: number;
  updated: number;
}

export interface RunRow {
  run_id: string;
  kind: string;
  range_from: number | null;
  range_to: number | null;
  started_at: number;
  ended_at: number | null;
  outcome: string;
  windows: number;
  sessions_written: number;
  sessions_new: number | null;
  sessions_updated: number | null;
  rejected: number;
  requests: number;
  retries: number;
  rate_limited: number;
  bisections: number;
  partitions_written: number;
  error: string | null;
}

export class SessionStore {
  /** Writes on the one main connection. */
  private readonly writes = new SerialQueue();
  private closed = false;

  private constructor(
    readonly layout: StoreLayout,
    readonly format: OutputFormat,
    private readonly db: Db,
    readonly readOnly: boolean,
  ) {}

  get conn(): DuckDBConnection {
    return this.db.conn;
  }

  /**
   * Opens the store, creating the data directory and schema when needed. Refuses a directory whose
   * DuckDB file belongs to another program, and a file held by another process.
   */
  static async open(opts: { dataDir: string; format: OutputFormat; readOnly?: boolean }): Promise<SessionStore> {
    const layout = layoutOf(opts.dataDir, opts.format);
    const readOnly = opts.readOnly ?? false;
    if (!readOnly) checkWriterSettings();
    let existed = await exists(layout.dbPath);
    if (readOnly && !existed) {
      throw new DataDirError(`no session-etl data in ${opts.dataDir} (expected ${layout.dbPath}); run a backfill or export first`);
    }
    // Nothing is written to a directory before it is known to be ours: a file of another program
    // where ours go, or a DuckDB file that is not ours, is refused first.
    if (!readOnly) await checkLayout(layout, opts.format);
    if (existed) {
      const head = await fileHead(layout.dbPath);
      if (head.length === 0 && !readOnly && !(await exists(`${layout.dbPath}.wal`))) {
        // A run killed while DuckDB was creating the file leaves it empty: it holds nothing; start anew.
        await rm(layout.dbPath, { force: true });
        existed = false;
      } else if (head.length > 0 && head.subarray(8, 12).toString('latin1') !== 'DUCK') {
        // Refused before DuckDB sees it (DuckDB would try to load an extension to read, say, an SQLite file).
        throw new DataDirError(
          `${layout.dbPath} is not a session-etl DuckDB file (not a DuckDB database at all: it starts with ` +
            `${JSON.stringify(head.toString('latin1').replace(/[^\x20-\x7e]/g, '.'))}); choose another --data-dir or move it away`,
        );
      }
    }
    if (!readOnly && !existed) await prepareDirs(layout);
    let db: Db;
    try {
      db = await openDb(layout.dbPath, { readOnly, ...(readOnly ? {} : { memoryLimit: WRITER_MEMORY_LIMIT, threads: WRITER_THREADS }) });
    } catch (err) {
      throw translateOpenError(err, layout.dbPath);
    }
    const store = new SessionStore(layout, opts.format, db, readOnly);
    try {
      await store.checkOwnership(existed);
      if (!readOnly) {
        if (existed) await prepareDirs(layout);
        await store.ensureSchema();
        await store.dropUncommittedFiles();
      }
    } catch (err) {
      db.close();
      throw err;
    }
    return store;
  }

  private async checkOwnership(existed: boolean): Promise<void> {
    if (!existed) return;
    const tables = await queryRows<{ table_name: string }>(
      this.conn,
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'`,
    );
    const names = new Set(tables.map((t) => t.table_name));
    if (names.size > 0 && !names.has('_session_etl_meta')) {
      throw new DataDirError(
        `${this.layout.dbPath} is a DuckDB file of another program (tables: ${[...names].slice(0, 5).join(', ')}); ` +
          'choose another --data-dir or move that file away',
      );
    }
    if (names.has('_session_etl_meta')) {
      const v = await queryRows<{ value: string }>(this.conn, `SELECT value FROM _session_etl_meta WHERE key = 'schema_version'`);
      const version = Number(v[0]?.value ?? 0);
      if (version > SCHEMA_VERSION) {
        throw new DataDirError(`${this.layout.dbPath} was written by a newer session-etl (schema ${version}); upgrade session-etl`);
      }
    }
  }

  private async ensureSchema(): Promise<void> {
    const c = this.conn;
    await c.run('BEGIN TRANSACTION');
    try {
      for (const ddl of STATE_DDL) await c.run(ddl);
      const genCol = await queryRows(c, `SELECT 1 FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = '_parquet_pending' AND column_name = 'gen'`);
      if (genCol.length === 0) {
        // Schema 1: one row per partition, primary key.
        await c.run('CREATE TABLE _parquet_pending_v2 AS SELECT partition, 0::BIGINT AS gen FROM _parquet_pending');
        await c.run('DROP TABLE _parquet_pending');
        await c.run('ALTER TABLE _parquet_pending_v2 RENAME TO _parquet_pending');
      }
      // Committed rows wait here, without an index, until a flush merges them (see mergePending).
      await c.run(sessionsTableDdl('_pending_rows').replace(/\n\)$/, ',\n  partition VARCHAR NOT NULL\n)'));
      if (this.format !== 'parquet') {
        await c.run(sessionsTableDdl('sessions'));
        await this.dropSessionsPrimaryKey();
      }
      await c.run(
        `INSERT INTO _session_etl_meta VALUES ('schema_version', '${SCHEMA_VERSION}'), ('created_by', 'session-etl')
         ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE _session_etl_meta.key = 'schema_version'`,
      );
      await c.run('COMMIT');
    } catch (err) {
      await c.run('ROLLBACK').catch(() => {});
      throw err;
    }
    await c.run(STAGING_DDL);
  }

  /**
   * Schema 1 (session-etl before the sliced merge) gave the sessions table a PRIMARY KEY index:
   * rebuilt without it, rows in started_at order, inside the caller's transaction.
   */
  private async dropSessionsPrimaryKey(): Promise<void> {
    const c = this.conn;
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

  /** Serialises writes on the one connection. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.writes.run(fn);
  }


  /** The merged coverage map: windows whose data is committed. */
  async coverage(conn: DuckDBConnection = this.conn): Promise<Window[]> {
    const rows = await queryRows<{ start_s: bigint | number; end_s: bigint | number }>(
      conn,
      'SELECT start_s, end_s FROM _coverage ORDER BY start_s',
    );
    return mergeIntervals(rows.map((r) => ({ start: Number(r.start_s), end: Number(r.end_s) })));
  }

  /** Coverage committed after `sinceMs` (used to resume an interrupted backfill). */
  async coverageSince(sinceMs: number): Promise<Window[]> {
    const rows = await queryRows<{ start_s: bigint; end_s: bigint }>(
      this.conn,
      'SELECT start_s, end_s FROM _coverage WHERE committed_at >= to_timestamp($1::DOUBLE)',
      [sinceMs / 1000],
    );
    return mergeIntervals(rows.map((r) => ({ start: Number(r.start_s), end: Number(r.end_s) })));
  }

  /**
   * Commits one window: its rows (appended to _pending_rows), its rejected records, its coverage
   * interval, in one transaction. Windows that arrive while a commit is running are grouped into the
   * next transaction (group commit): each window is still all-or-nothing, and a group costs one
   * fsync instead of one per window. Rows reach the sessions table (upserted, newest extracted_at
   * wins) when a flush merges them: appending to a table without an index and merging in one
   * statement costs a fraction of upserting window by window into the primary key's index.
   */
  async commitWindow(commit: WindowCommit): Promise<CommitResult> {
    let file: QueuedCommit['file'];
    if (commit.ndjson && commit.ndjson.count > 0) {
      // Written now, so the body's memory is free while the window waits for its group. With a
      // sessions table the file itself is what the transaction commits (by name): it must be durable first.
      const keep = this.format !== 'parquet';
      if (keep && !this.pendingDirMade) {
        await mkdir(this.layout.pendingDir, { recursive: true });
        this.pendingDirMade = true;
      }
      // Named by window start: a merge reads its files in that order, so rows land in the table roughly by time.
      const path = join(
        keep ? this.layout.pendingDir : this.layout.tmpDir,
        `rows-${String(commit.window.start).padStart(12, '0')}-${process.pid}-${++this.fileSeq}.ndjson`,
      );
      await writeFile(path, commit.ndjson.bytes);
      if (keep) await fsyncFile(path);
      file = { path, count: commit.ndjson.count, extractedAt: commit.ndjson.extractedAt };
    }
    const queued: QueuedCommit = {
      window: commit.window,
      rejected: commit.rejected,
      runId: commit.runId,
      ...(commit.batch ? { batch: commit.batch } : {}),
      ...(file ? { file } : {}),
    };
    return new Promise<CommitResult>((resolve, reject) => {
      this.waiting.push({ commit: queued, resolve, reject });
      if (!this.groupRunning) void this.drainGroups();
    });
  }

  private fileSeq = 0;
  private pendingDirMade = false;
  private waiting: Array<{ commit: QueuedCommit; resolve: (r: CommitResult) => void; reject: (e: unknown) => void }> = [];
  private groupRunning = false;

  private async drainGroups(): Promise<void> {
    this.groupRunning = true;
    try {
      while (this.waiting.length) {
        const group = this.waiting.splice(0, MAX_GROUP);
        try {
          await this.exclusive(() => this.commitGroup(group.map((g) => g.commit)));
          crashPoint('after-commit');
          group.forEach((g) => g.resolve({ written: rowsOf(g.commit) }));
          this.kickBackground();
          // Format parquet loaded the files into _pending_rows; the others committed them by name.
          if (this.format === 'parquet') for (const g of group) if (g.commit.file) await rm(g.commit.file.path, { force: true }).catch(() => {});
        } catch (err) {
          group.forEach((g) => g.reject(err));
          for (const g of group) if (g.commit.file) await rm(g.commit.file.path, { force: true }).catch(() => {});
        }
      }
    } finally {
      this.groupRunning = false;
    }
  }

  private async commitGroup(commits: QueuedCommit[]): Promise<void> {
    const c = this.conn;
    for (const x of commits) if (x.batch) await this.stage(x.batch);
    const files = commits.flatMap((x) => (x.file ? [x.file] : []));
    const staged = commits.some((x) => x.batch && x.batch.length > 0);
    await c.run('BEGIN TRANSACTION');
    try {
      if (files.length && this.format !== 'parquet') {
        // The files are the rows: the merge reads them (DuckDB parses them, with explicit types).
        const values = files.map((_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`).join(', ');
        await c.run(`INSERT INTO _pending_files VALUES ${values}`, files.flatMap((f) => [basename(f.path), f.extractedAt, f.count]));
      } else if (files.length) {
        // DuckDB parses the records itself, with explicit types (the scanner checked them).
        const list = files.map((f) => sqlString(f.path)).join(', ');
        const lineage = files.map((f) => `(${sqlString(f.path)}, ${f.extractedAt})`).join(', ');
        await c.run(
          `INSERT INTO _pending_rows SELECT ${NDJSON_SELECT}
           FROM read_json([${list}], columns = ${NDJSON_COLUMNS}, format = 'newline_delimited', filename = true) r
           JOIN (VALUES ${lineage}) f(filename, extracted) USING (filename)`,
        );
      }
      if (staged) {
        await c.run(`INSERT INTO _pending_rows SELECT ${STAGING_SELECT}, ${PARTITION_OF_STAGED} FROM _staging`);
      }
      for (const x of commits) {
        for (const r of x.rejected) {
          await c.run(
            `INSERT INTO rejected_sessions VALUES ($1, $2, $3, $4, to_timestamp($5::DOUBLE), to_timestamp($6::DOUBLE), $7, now())`,
            [r.sessionId, r.field, r.reason, redact(safeJson(r.raw)), x.window.start, x.window.end, x.runId],
          );
        }
      }
      crashPoint('mid-transaction');
      const values = commits.map((_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3}, now())`).join(', ');
      await c.run(`INSERT INTO _coverage VALUES ${values}`, commits.flatMap((x) => [x.window.start, x.window.end, x.runId]));
      await c.run('COMMIT');
    } catch (err) {
      await c.run('ROLLBACK').catch(() => {});
      const w = commits.map((x) => describeWindow(x.window)).join(', ');
      throw wrapWriteError(err, `committing window${commits.length > 1 ? 's' : ''} ${w}`);
    } finally {
      if (staged) await c.run('DELETE FROM _staging').catch(() => {});
    }
  }

  /**
   * Moves committed rows (pending files, and rows the precise path staged in _pending_rows) into the
   * sessions table, all of them, slice by slice. See mergeSlice.
   */
  mergePending(): Promise<MergeResult> {
    return this.merging(async () => {
      const total: MergeResult = { inserted: 0, updated: 0 };
      const conn = await this.mergeConnection();
      for (;;) {
        const m = await this.mergeSlice(conn);
        total.inserted += m.inserted;
        total.updated += m.updated;
        if (!m.more) return total;
      }
    });
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
  private async mergeSlice(c: DuckDBConnection): Promise<MergeResult & { more: boolean }> {
    const none = { inserted: 0, updated: 0, more: false };
    if (this.format === 'parquet') return none;
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
      paths = slice.map((f) => join(this.layout.pendingDir, f.file));
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
      const floor = this.runRowidFloor ?? (1n << 62n);
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
      if (this.format === 'both') {
        for (const r of await queryRows<{ p: string }>(c, 'SELECT DISTINCT p FROM _versions WHERE fresh')) touched.add(r.p);
        if (touched.size) {
          await c.run(`INSERT INTO _parquet_pending SELECT unnest($1::VARCHAR[]), $2`, [listValue([...touched]), await this.nextGen(c)]);
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

  private runRowidFloor: bigint | undefined;

  /**
   * Marks the start of a run for the new/updated counts: a session whose stored version predates
   * this call counts as updated when replaced; one first stored after it counts once, as new or
   * updated, however many windows return it. (Row ids are renumbered by a checkpoint that drops
   * deleted rows, which DuckDB runs at most once per 1 GB of WAL: a run that long may count a few
   * sessions twice; the data is not affected.)
   */
  async beginRunCounts(): Promise<void> {
    if (this.format === 'parquet') return;
    await this.merging(async () => {
      const r = await queryRows<{ m: bigint }>(await this.mergeConnection(), 'SELECT coalesce(max(rowid), -1) AS m FROM sessions');
      this.runRowidFloor = BigInt(r[0]?.m ?? -1n);
    });
  }

  /** Files of windows whose transaction never committed (a crash between the write and the commit). */
  private async dropUncommittedFiles(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.layout.pendingDir);
    } catch {
      return;
    }
    const listed = new Set((await queryRows<{ file: string }>(this.conn, 'SELECT file FROM _pending_files')).map((r) => r.file));
    for (const n of names) if (!listed.has(n)) await rm(join(this.layout.pendingDir, n), { force: true, recursive: true });
    if (listed.size === 0) await rmdir(this.layout.pendingDir).catch(() => {});
  }

  private async stage(batch: RowBatch): Promise<void> {
    if (batch.length === 0) return;
    const appender = await this.conn.createAppender('_staging', null, 'temp');
    try {
      for (let off = 0; off < batch.length; off += CHUNK_ROWS) {
        const n = Math.min(CHUNK_ROWS, batch.length - off);
        const chunk = DuckDBDataChunk.create(STAGING_TYPES, n);
        chunk.setColumns(
          batch.columns.map((col) => (off === 0 && n === col.length ? col : col.slice(off, off + n))) as never,
        );
        appender.appendDataChunk(chunk);
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }

  /** Partitions whose Parquet file is older than the committed data. */
  async pendingPartitions(conn: DuckDBConnection = this.conn): Promise<string[]> {
    if (this.format === 'duckdb') return [];
    const sql =
      this.format === 'parquet'
        ? 'SELECT DISTINCT partition AS p FROM _pending_rows ORDER BY 1'
        : 'SELECT DISTINCT partition AS p FROM _parquet_pending ORDER BY 1';
    return (await queryRows<{ p: string }>(conn, sql)).map((r) => r.p);
  }

  /**
   * Makes committed data visible in its final form: merges every committed row into the sessions
   * table (formats duckdb and both), then rewrites every pending Parquet partition whole: query →
   * .tmp file → fsync → rename over the old file → fsync the directory → clear the pending mark.
   * Readers only ever see complete files. Also returns what background merges did since the last flush.
   */
  flush(): Promise<FlushResult> {
    if (this.format === 'parquet') return this.exclusive(() => this.flushParquetOnly());
    return (async () => {
      const merged = await this.mergePending();
      const partitions = this.format === 'both' ? await this.rewriting(async () => this.rewritePending(await this.pendingPartitions())) : [];
      const result = this.takeBackgroundResult();
      result.inserted += merged.inserted;
      result.updated += merged.updated;
      result.partitions.push(...partitions);
      return result;
    })();
  }

  /** Format parquet: pending rows merged with each partition's old file. */
  private async flushParquetOnly(): Promise<FlushResult> {
    const result: FlushResult = { partitions: [], inserted: 0, updated: 0 };
    for (const p of await this.pendingPartitions()) {
      const counts = await this.rewritePartition(this.conn, p);
      await this.conn.run(`DELETE FROM _pending_rows WHERE partition = ${sqlString(p)}`);
      result.partitions.push(p);
      result.inserted += counts.inserted;
      result.updated += counts.updated;
    }
    return result;
  }

  /**
   * Rewrites the given partitions from the sessions table: independent COPYs, run side by side on
   * the background connections; each file's fsync and rename run while the next COPY does.
   * Returns the partitions rewritten (all of them, or it throws).
   */
  private async rewritePending(partitions: string[]): Promise<string[]> {
    if (partitions.length === 0) return [];
    const conns = await this.rewriteConnections(Math.min(REWRITE_CONNECTIONS, partitions.length));
    // The marks as they stand before any COPY: each COPY then reads at least the data they stand for.
    const seen = await queryRows<{ p: string; g: bigint | number }>(
      conns[0]!,
      `SELECT partition AS p, max(gen) AS g FROM _parquet_pending WHERE partition IN (SELECT unnest($1::VARCHAR[])) GROUP BY 1`,
      [listValue(partitions)],
    );
    const gens = new Map(seen.map((r) => [r.p, Number(r.g)]));
    let next = 0;
    const done: string[] = [];
    const finishing: Array<Promise<void>> = [];
    let failure: unknown;
    await Promise.all(
      conns.map(async (conn) => {
        while (next < partitions.length && failure === undefined) {
          const p = partitions[next++]!;
          try {
            const finish = this.copyPartition(conn, p).then((fin) => fin());
            // The COPY itself is awaited here; the rest (fsync, rename) runs on.
            finishing.push(finish.then(() => void done.push(p), (err: unknown) => void (failure ??= err)));
            await this.copying.get(p);
          } catch (err) {
            failure ??= err;
          }
        }
      }),
    );
    await Promise.all(finishing);
    const cleared = done.filter((p) => gens.has(p));
    if (cleared.length) {
      // Only the marks seen above: a merge committed since then keeps its mark, and its rows are
      // written by the next rewrite.
      await conns[0]!.run(
        `DELETE FROM _parquet_pending USING (SELECT unnest($1::VARCHAR[]) AS p, unnest($2::BIGINT[]) AS g) seen
         WHERE _parquet_pending.partition = seen.p AND _parquet_pending.gen <= seen.g`,
        [listValue(cleared), listValue(cleared.map((p) => BigInt(gens.get(p)!)))],
      );
    }
    if (failure !== undefined) throw failure;
    return partitions;
  }

  // ---- background merging --------------------------------------------------------------------

  private readonly merges = new SerialQueue();
  private readonly rewrites = new SerialQueue();
  private mergeLoop = false;
  private mergeAgain = false;
  private rewriteLoop = false;
  private rewriteAgain = false;
  private bgResult: FlushResult = { partitions: [], inserted: 0, updated: 0 };
  private closing = false;
  private gen = 0;
  /** The first error of a background merge or rewrite (the final flush tries again and reports). */
  backgroundError: unknown;

  /** Serialises merges (on their own connection: commits go on meanwhile). */
  private merging<T>(fn: () => Promise<T>): Promise<T> {
    return this.merges.run(fn);
  }

  /** Serialises Parquet rewrites (on their own connections: merges and commits go on meanwhile). */
  private rewriting<T>(fn: () => Promise<T>): Promise<T> {
    return this.rewrites.run(fn);
  }

  /** A generation number for Parquet marks, above every one already stored. */
  private async nextGen(c: DuckDBConnection): Promise<bigint> {
    if (this.gen === 0) {
      this.gen = Number((await queryRows<{ g: bigint | null }>(c, 'SELECT coalesce(max(gen), 0) AS g FROM _parquet_pending'))[0]?.g ?? 0);
    }
    return BigInt(++this.gen);
  }

  private takeBackgroundResult(): FlushResult {
    const r = this.bgResult;
    this.bgResult = { partitions: [], inserted: 0, updated: 0 };
    return r;
  }

  /**
   * After a commit (formats duckdb and both): merge what is committed, slice by slice; after each
   * merge, rewrite (on other connections, while the next merge runs) the Parquet partitions of days
   * the coverage map holds whole (a day still being fetched waits for its last window, or for the
   * flush at the end of the run). Work done here overlaps the fetching; the run's final flush only
   * takes what is left. A failure stops background work until the next flush, which tries again
   * and reports.
   */
  private kickBackground(): void {
    if (this.format === 'parquet' || this.closing || this.backgroundError !== undefined) return;
    this.mergeAgain = true;
    if (this.mergeLoop) return;
    this.mergeLoop = true;
    void this.merging(async () => {
      try {
        const conn = await this.mergeConnection();
        while (this.mergeAgain && !this.closing && this.backgroundError === undefined) {
          this.mergeAgain = false;
          const m = await this.mergeSlice(conn);
          this.bgResult.inserted += m.inserted;
          this.bgResult.updated += m.updated;
          if (m.more) this.mergeAgain = true;
          if (this.format === 'both') this.kickRewrites();
        }
      } catch (err) {
        this.backgroundError ??= err;
      } finally {
        this.mergeLoop = false;
      }
    });
  }

  private kickRewrites(): void {
    if (this.closing || this.backgroundError !== undefined) return;
    this.rewriteAgain = true;
    if (this.rewriteLoop) return;
    this.rewriteLoop = true;
    void this.rewriting(async () => {
      try {
        const conn = (await this.rewriteConnections(1))[0]!;
        while (this.rewriteAgain && !this.closing && this.backgroundError === undefined) {
          this.rewriteAgain = false;
          const ready = completeDays(await this.pendingPartitions(conn), await this.coverage(conn));
          this.bgResult.partitions.push(...(await this.rewritePending(ready)));
        }
      } catch (err) {
        this.backgroundError ??= err;
      } finally {
        this.rewriteLoop = false;
      }
    });
  }

  private mergeConn: DuckDBConnection | undefined;
  private async mergeConnection(): Promise<DuckDBConnection> {
    if (!this.mergeConn) {
      this.mergeConn = await this.db.instance.connect();
      await this.mergeConn.run("SET TimeZone = 'UTC'");
    }
    return this.mergeConn;
  }

  private copying = new Map<string, Promise<unknown>>();

  /** COPY one partition of the sessions table to .tmp; resolves to the step that puts the file in place. */
  private copyPartition(c: DuckDBConnection, p: string): Promise<() => Promise<void>> {
    const dir = partitionDir(this.layout.parquetDir, p);
    const final = join(dir, PARTITION_FILE);
    const tmp = join(this.layout.tmpDir, `${p}-${process.pid}-${++this.fileSeq}.parquet`);
    const copy = c.run(
      `COPY (SELECT ${COLUMN_LIST} FROM sessions WHERE ${partitionPredicate(p)} ORDER BY started_at, session_id)
       TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)`,
    );
    this.copying.set(p, copy.catch(() => {}));
    return copy.then(
      (copied) => async () => {
        this.copying.delete(p);
        await placePartitionFile(Number(copied.rowsChanged), tmp, dir, final, p);
      },
      async (err: unknown) => {
        this.copying.delete(p);
        await rm(tmp, { force: true }).catch(() => {});
        throw wrapWriteError(err, `rewriting Parquet partition date=${p}`);
      },
    );
  }

  private extra: DuckDBConnection[] = [];
  private async rewriteConnections(n: number): Promise<DuckDBConnection[]> {
    while (this.extra.length < n) {
      const conn = await this.db.instance.connect();
      await conn.run("SET TimeZone = 'UTC'");
      this.extra.push(conn);
    }
    return this.extra.slice(0, Math.max(0, n));
  }

  private async rewritePartition(c: DuckDBConnection, p: string): Promise<{ inserted: number; updated: number }> {
    const dir = partitionDir(this.layout.parquetDir, p);
    const final = join(dir, PARTITION_FILE);
    const tmp = join(this.layout.tmpDir, `${p}-${process.pid}-${++this.fileSeq}.parquet`);
    let source: string;
    let inserted = 0;
    let updated = 0;
    if (this.format === 'parquet') {
      const hasOld = await exists(final);
      const pending = `SELECT ${COLUMN_LIST}, 0 AS src FROM _pending_rows WHERE partition = ${sqlString(p)}`;
      const all = hasOld ? `${pending} UNION ALL SELECT ${COLUMN_LIST}, 1 AS src FROM read_parquet(${sqlString(final)})` : pending;
      source = `SELECT ${COLUMN_LIST} FROM (${all}) QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY extracted_at DESC, src) = 1`;
      if (hasOld) {
        const r = await queryRows<{ n: bigint; u: bigint }>(
          c,
          `SELECT count(DISTINCT p.session_id) AS n, count(DISTINCT o.session_id) AS u
           FROM (SELECT session_id FROM _pending_rows WHERE partition = ${sqlString(p)}) p
           LEFT JOIN read_parquet(${sqlString(final)}) o USING (session_id)`,
        );
        updated = Number(r[0]?.u ?? 0);
        inserted = Number(r[0]?.n ?? 0) - updated;
      } else {
        const r = await queryRows<{ n: bigint }>(c, `SELECT count(DISTINCT session_id) AS n FROM _pending_rows WHERE partition = ${sqlString(p)}`);
        inserted = Number(r[0]?.n ?? 0);
      }
    } else {
      source = `SELECT ${COLUMN_LIST} FROM sessions WHERE ${partitionPredicate(p)}`;
    }
    let copied: { rowsChanged: number | bigint };
    try {
      copied = await c.run(
        `COPY (${source} ORDER BY started_at, session_id) TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)`,
      );
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw wrapWriteError(err, `rewriting Parquet partition date=${p}`);
    }
    await placePartitionFile(Number(copied.rowsChanged), tmp, dir, final, p);
    return { inserted, updated };
  }

  /** Replaces the coverage rows by their merged intervals (keeps the table small). */
  compactCoverage(): Promise<void> {
    return this.exclusive(async () => {
      const c = this.conn;
      // A merged interval keeps the earliest commit time of its parts: resuming a backfill takes only
      // what was committed after it started (coverageSince), so a run that failed or was stopped must
      // not make older coverage look like its own work (it would then be skipped, never refreshed).
      const rows = await queryRows<{ start_s: bigint | number; end_s: bigint | number; ms: bigint | number }>(
        c,
        'SELECT start_s, end_s, epoch_ms(committed_at) AS ms FROM _coverage ORDER BY start_s, end_s',
      );
      const merged: Array<{ start: number; end: number; ms: number }> = [];
      for (const r of rows) {
        const last = merged[merged.length - 1];
        const w = { start: Number(r.start_s), end: Number(r.end_s), ms: Number(r.ms) };
        if (last && w.start <= last.end) {
          last.end = Math.max(last.end, w.end);
          last.ms = Math.min(last.ms, w.ms);
        } else merged.push(w);
      }
      await c.run('BEGIN TRANSACTION');
      try {
        await c.run('DELETE FROM _coverage');
        for (const w of merged) await c.run(`INSERT INTO _coverage VALUES ($1, $2, NULL, to_timestamp($3::DOUBLE / 1000))`, [w.start, w.end, w.ms]);
        await c.run('COMMIT');
      } catch (err) {
        await c.run('ROLLBACK').catch(() => {});
        throw wrapWriteError(err, 'compacting the coverage map');
      }
    });
  }

  // ---- run history -------------------------------------------------------------------------

  recordRun(run: RunRow): Promise<void> {
    return this.exclusive(async () => {
      await this.conn.run(
        `INSERT INTO _runs VALUES ($1, $2, to_timestamp($3::DOUBLE), to_timestamp($4::DOUBLE), to_timestamp($5::DOUBLE),
           to_timestamp($6::DOUBLE), $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
         ON CONFLICT (run_id) DO UPDATE SET ended_at = excluded.ended_at, outcome = excluded.outcome, windows = excluded.windows,
           sessions_written = excluded.sessions_written, sessions_new = excluded.sessions_new,
           sessions_updated = excluded.sessions_updated, rejected = excluded.rejected, requests = excluded.requests,
           retries = excluded.retries, rate_limited = excluded.rate_limited, bisections = excluded.bisections,
           partitions_written = excluded.partitions_written, error = excluded.error`,
        [
          run.run_id, run.kind, run.range_from, run.range_to, run.started_at, run.ended_at, run.outcome, run.windows,
          run.sessions_written, run.sessions_new, run.sessions_updated, run.rejected, run.requests, run.retries,
          run.rate_limited, run.bisections, run.partitions_written, run.error,
        ],
      );
    });
  }

  async lastRuns(limit = 10): Promise<Record<string, unknown>[]> {
    return queryRows(this.conn, `SELECT * FROM _runs ORDER BY started_at DESC LIMIT ${Math.max(1, Math.floor(limit))}`);
  }

  /** The unfinished backfill of exactly this range, if any (to resume it). */
  async openBackfill(range: Window): Promise<{ startedAtMs: number } | undefined> {
    const rows = await queryRows<{ ms: number }>(
      this.conn,
      `SELECT epoch_ms(started_at) AS ms FROM _backfills WHERE range_from = $1 AND range_to = $2 AND completed_at IS NULL
       ORDER BY started_at DESC LIMIT 1`,
      [range.start, range.end],
    );
    return rows[0] ? { startedAtMs: Number(rows[0].ms) } : undefined;
  }

  beginBackfill(range: Window, runId: string): Promise<void> {
    return this.exclusive(async () => {
      await this.conn.run(`INSERT INTO _backfills VALUES ($1, $2, $3, now(), NULL)`, [range.start, range.end, runId]);
    });
  }

  completeBackfill(range: Window): Promise<void> {
    return this.exclusive(async () => {
      await this.conn.run(`UPDATE _backfills SET completed_at = now() WHERE range_from = $1 AND range_to = $2 AND completed_at IS NULL`, [
        range.start,
        range.end,
      ]);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    await this.writes.idle();
    await this.merges.idle();
    await this.rewrites.idle();
    this.closed = true;
    if (!this.readOnly) {
      await rmdir(this.layout.pendingDir).catch(() => {});
      // The checkpoint DuckDB would run while closing, here with every core and off the event loop.
      await this.conn.run(`SET threads = ${availableParallelism()}`).catch(() => {});
      await this.conn.run('CHECKPOINT').catch(() => {});
    }
    this.mergeConn?.closeSync();
    for (const conn of this.extra) conn.closeSync();
    this.db.close();
  }

}

/** Runs tasks one after another, in the order given; a failed task does not stop the next. */
class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => {});
    return next;
  }

  /** Resolves when every task given so far has ended. */
  idle(): Promise<void> {
    return this.tail.then(() => {});
  }
}

function rowsOf(c: QueuedCommit): number {
  return (c.batch?.length ?? 0) + (c.file?.count ?? 0);
}

/** The partitions (YYYY-MM-DD) whose whole UTC day lies inside the coverage. */
export function completeDays(partitions: readonly string[], coverage: readonly Window[]): string[] {
  return partitions.filter((p) => {
    if (p === NULL_PARTITION) return false;
    const start = Date.parse(`${p}T00:00:00Z`) / 1000;
    if (!Number.isFinite(start)) return false;
    return coverage.some((w) => w.start <= start && w.end >= start + 86_400);
  });
}

function partitionPredicate(p: string): string {
  if (p === NULL_PARTITION) return 'started_at IS NULL';
  return `started_at >= TIMESTAMPTZ ${sqlString(`${p} 00:00:00+00`)} AND started_at < TIMESTAMPTZ ${sqlString(`${p} 00:00:00+00`)} + INTERVAL 1 DAY`;
}


function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? 'null';
  } catch {
    return String(v);
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Puts a partition's new file (written to .tmp by COPY) in place: fsync, rename over the old
 * file, fsync the directory. A partition that holds no session any more is removed instead.
 */
async function placePartitionFile(rows: number, tmp: string, dir: string, final: string, p: string): Promise<void> {
  try {
    if (rows === 0) {
      await rm(tmp, { force: true });
      await rm(dir, { recursive: true, force: true });
      return;
    }
    await fsyncFile(tmp);
    crashPoint('mid-parquet-rewrite');
    await mkdir(dir, { recursive: true });
    await rename(tmp, final);
    await fsyncDir(dir);
    crashPoint('after-parquet-rename');
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    throw wrapWriteError(err, `rewriting Parquet partition date=${p}`);
  }
}

/** The first 16 bytes of a file (fewer when it is shorter). */
async function fileHead(path: string): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const b = Buffer.alloc(16);
    const { bytesRead } = await fh.read(b, 0, 16, 0);
    return b.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** Refuses, writing nothing, a data directory where a file stands in the place of one of our directories. */
async function checkLayout(layout: StoreLayout, format: OutputFormat): Promise<void> {
  const dirs = [layout.dataDir, layout.tmpDir, layout.pendingDir];
  if (format !== 'duckdb') dirs.push(dirname(layout.parquetDir), layout.parquetDir);
  for (const d of dirs) {
    let st;
    try {
      st = await stat(d);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      throw new DataDirError(`data directory ${layout.dataDir} cannot be used (${code}): ${d} is not reachable; choose another --data-dir`, { cause: err });
    }
    if (!st.isDirectory()) {
      throw new DataDirError(
        `data directory ${layout.dataDir} cannot be used: ${d} is a file (of another program?) where session-etl keeps a directory; ` +
          'choose another --data-dir or move that file away',
      );
    }
  }
}

async function prepareDirs(layout: StoreLayout): Promise<void> {
  try {
    await mkdir(layout.dataDir, { recursive: true });
    const st = await stat(layout.dataDir);
    if (!st.isDirectory()) throw new DataDirError(`data directory ${layout.dataDir} is not a directory`);
    await mkdir(layout.tmpDir, { recursive: true });
    // Leftovers of a crashed rewrite: never under parquet/sessions, so readers never saw them.
    for (const f of await readdir(layout.tmpDir)) await rm(join(layout.tmpDir, f), { force: true, recursive: true });
    const probe = join(layout.tmpDir, `.probe-${process.pid}`);
    const fh = await open(probe, 'w');
    await fh.close();
    await rm(probe, { force: true });
  } catch (err) {
    if (err instanceof DataDirError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new DataDirError(
      `data directory ${layout.dataDir} cannot be used (${code ?? (err as Error).message}): ` +
        (code === 'EACCES' || code === 'EROFS' || code === 'EPERM'
          ? 'it is not writable; choose another --data-dir or fix its permissions'
          : code === 'ENOTDIR' || code === 'EEXIST'
            ? 'a file stands where a directory is needed'
            : 'check the path'),
      { cause: err },
    );
  }
}

function translateOpenError(err: unknown, path: string): Error {
  const msg = err instanceof Error ? err.message : String(err);
  if (/lock/i.test(msg) && /conflict|Could not set lock/i.test(msg)) {
    return new StoreBusyError(
      `${path} is open in another process (another session-etl run, or a tool holding it for writing): ${firstLine(msg)}`,
      { cause: err },
    );
  }
  if (/not a valid DuckDB database file|Invalid Input|not a DuckDB|unable to open|Corrupt|IO Error/i.test(msg)) {
    return new DataDirError(`${path} is not a session-etl DuckDB file (${firstLine(msg)}); choose another --data-dir or move it away`, {
      cause: err,
    });
  }
  return err instanceof Error ? err : new Error(msg);
}

function wrapWriteError(err: unknown, what: string): Error {
  const msg = err instanceof Error ? err.message : String(err);
  const full = /No space left|ENOSPC|disk full/i.test(msg)
    ? `${what} failed: the disk is full (${firstLine(msg)}); data committed before this point is intact`
    : `${what} failed: ${firstLine(msg)}; data committed before this point is intact`;
  return new StoreWriteError(full, { cause: err });
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.slice(0, 300);
}

async function fsyncFile(path: string): Promise<void> {
  const fh = await open(path, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function fsyncDir(path: string): Promise<void> {
  try {
    const fh = await open(path, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Some file systems refuse fsync on directories; the rename itself is still atomic.
  }
}
