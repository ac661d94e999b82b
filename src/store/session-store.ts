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
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBDataChunk, BOOLEAN, DOUBLE, VARCHAR, listValue, type DuckDBType, type DuckDBConnection } from '@duckdb/node-api';
import type { RowBatch, RejectedRecord } from '../pipeline/flatten.js';
import { crashPoint } from '../util/crash-point.js';
import { mergeIntervals } from '../pipeline/intervals.js';
import type { Window } from '../pipeline/windows.js';
import { SESSION_COLUMNS, sessionsTableDdl } from './contract.js';
import { openDb, queryRows, sqlString, type Db } from './duckdb.js';
import { DataDirError, StoreBusyError, StoreWriteError } from './errors.js';
import { layoutOf, NULL_PARTITION, PARTITION_FILE, partitionDir, type OutputFormat, type StoreLayout } from './layout.js';

export const SCHEMA_VERSION = 1;
const CHUNK_ROWS = 2048;
/** Most windows committed in one transaction. */
const MAX_GROUP = 64;

const STATE_DDL = [
  `CREATE TABLE IF NOT EXISTS _session_etl_meta (key VARCHAR PRIMARY KEY, value VARCHAR)`,
  `CREATE TABLE IF NOT EXISTS _coverage (start_s BIGINT NOT NULL, end_s BIGINT NOT NULL, run_id VARCHAR, committed_at TIMESTAMPTZ NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS _parquet_pending (partition VARCHAR PRIMARY KEY)`,
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
const UPSERT_SET = SESSION_COLUMNS.filter((c) => c.name !== 'session_id')
  .map((c) => `${c.name} = excluded.${c.name}`)
  .join(', ');
const COLUMN_LIST = SESSION_COLUMNS.map((c) => c.name).join(', ');

export interface WindowCommit {
  window: Window;
  batch: RowBatch;
  rejected: readonly RejectedRecord[];
  runId: string;
}

export interface CommitResult {
  written: number;
  /** Sessions not stored before (undefined with format parquet until the partition rewrite). */
  inserted: number | undefined;
  updated: number | undefined;
  partitions: string[];
}

export interface FlushResult {
  partitions: string[];
  /** With format parquet: sessions new to the dataset / replacing a stored version. */
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
  private queue: Promise<unknown> = Promise.resolve();
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
    if (!readOnly) await prepareDirs(layout);
    else if (!(await exists(layout.dbPath))) {
      throw new DataDirError(`no session-etl data in ${opts.dataDir} (expected ${layout.dbPath}); run a backfill or export first`);
    }
    const existed = await exists(layout.dbPath);
    let db: Db;
    try {
      db = await openDb(layout.dbPath, { readOnly });
    } catch (err) {
      throw translateOpenError(err, layout.dbPath);
    }
    const store = new SessionStore(layout, opts.format, db, readOnly);
    try {
      await store.checkOwnership(existed);
      if (!readOnly) await store.ensureSchema();
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
      if (this.format === 'parquet') {
        await c.run(sessionsTableDdl('_pending_rows', false).replace(/\n\)$/, ',\n  partition VARCHAR NOT NULL\n)'));
      } else {
        await c.run(sessionsTableDdl('sessions'));
      }
      await c.run(
        `INSERT INTO _session_etl_meta VALUES ('schema_version', '${SCHEMA_VERSION}'), ('created_by', 'session-etl') ON CONFLICT DO NOTHING`,
      );
      await c.run('COMMIT');
    } catch (err) {
      await c.run('ROLLBACK').catch(() => {});
      throw err;
    }
    await c.run(STAGING_DDL);
  }

  /** Serialises writes on the one connection. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => {});
    return next;
  }

  /** The merged coverage map: windows whose data is committed. */
  async coverage(): Promise<Window[]> {
    const rows = await queryRows<{ start_s: bigint | number; end_s: bigint | number }>(
      this.conn,
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
   * Commits one window: its rows (upserted, newest extracted_at wins), its rejected records, its
   * coverage interval and the Parquet partitions it touched, in one transaction. Windows that
   * arrive while a commit is running are grouped into the next transaction (group commit): each
   * window is still all-or-nothing, and a group costs one fsync instead of one per window.
   */
  commitWindow(commit: WindowCommit): Promise<CommitResult> {
    return new Promise<CommitResult>((resolve, reject) => {
      this.waiting.push({ commit, resolve, reject });
      if (!this.groupRunning) void this.drainGroups();
    });
  }

  private waiting: Array<{ commit: WindowCommit; resolve: (r: CommitResult) => void; reject: (e: unknown) => void }> = [];
  private groupRunning = false;

  private async drainGroups(): Promise<void> {
    this.groupRunning = true;
    try {
      while (this.waiting.length) {
        const group = this.waiting.splice(0, MAX_GROUP);
        try {
          const r = await this.exclusive(() => this.commitGroup(group.map((g) => g.commit)));
          crashPoint('after-commit');
          // The group's counts go to its first window, so that summing per-window results is right.
          group.forEach((g, i) =>
            g.resolve(
              i === 0
                ? r
                : { written: 0, inserted: r.inserted === undefined ? undefined : 0, updated: r.updated === undefined ? undefined : 0, partitions: [] },
            ),
          );
        } catch (err) {
          group.forEach((g) => g.reject(err));
        }
      }
    } finally {
      this.groupRunning = false;
    }
  }

  private async commitGroup(commits: WindowCommit[]): Promise<CommitResult> {
    const c = this.conn;
    const written = commits.reduce((n, x) => n + x.batch.length, 0);
    for (const x of commits) await this.stage(x.batch);
    await c.run('BEGIN TRANSACTION');
    try {
      let inserted: number | undefined;
      let updated: number | undefined;
      let partitions: string[] = [];
      if (written > 0 && this.format === 'parquet') {
        await c.run(`INSERT INTO _pending_rows SELECT ${STAGING_SELECT}, ${PARTITION_OF_STAGED} FROM _staging`);
        partitions = (await queryRows<{ p: string }>(c, `SELECT DISTINCT ${PARTITION_OF_STAGED} AS p FROM _staging`)).map((r) => r.p);
      } else if (written > 0) {
        // One statement learns the partitions touched (new rows' dates and the dates of the rows they
        // replace) and how many ids are new.
        const info = await queryRows<{ p: string | null; existing: bigint; distinct_ids: bigint }>(
          c,
          `WITH ids AS (SELECT DISTINCT session_id FROM _staging),
                old AS (SELECT s.session_id, ${PARTITION_OF_STORED.replace('started_at', 's.started_at')} AS p FROM sessions s JOIN ids USING (session_id))
           SELECT p, (SELECT count(*) FROM old) AS existing, (SELECT count(*) FROM ids) AS distinct_ids
           FROM (SELECT ${PARTITION_OF_STAGED} AS p FROM _staging UNION SELECT p FROM old)`,
        );
        partitions = info.map((r) => r.p!).filter((p) => p !== null);
        updated = Number(info[0]?.existing ?? 0);
        inserted = Number(info[0]?.distinct_ids ?? 0) - updated;
        await c.run(
          `INSERT INTO sessions (${COLUMN_LIST}) SELECT ${STAGING_SELECT} FROM _staging
           QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY extracted_at DESC) = 1
           ON CONFLICT (session_id) DO UPDATE SET ${UPSERT_SET} WHERE excluded.extracted_at >= sessions.extracted_at`,
        );
        if (this.format === 'both' && partitions.length) {
          await c.run(`INSERT INTO _parquet_pending SELECT unnest($1::VARCHAR[]) ON CONFLICT DO NOTHING`, [listValue(partitions)]);
        }
      } else if (this.format !== 'parquet') {
        inserted = 0;
        updated = 0;
      }
      for (const x of commits) {
        for (const r of x.rejected) {
          await c.run(
            `INSERT INTO rejected_sessions VALUES ($1, $2, $3, $4, to_timestamp($5::DOUBLE), to_timestamp($6::DOUBLE), $7, now())`,
            [r.sessionId, r.field, r.reason, safeJson(r.raw), x.window.start, x.window.end, x.runId],
          );
        }
      }
      crashPoint('mid-transaction');
      const values = commits.map((_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3}, now())`).join(', ');
      await c.run(`INSERT INTO _coverage VALUES ${values}`, commits.flatMap((x) => [x.window.start, x.window.end, x.runId]));
      await c.run('COMMIT');
      // Written = distinct sessions upserted (a session twice in the group counts once).
      const distinct = inserted !== undefined && updated !== undefined ? inserted + updated : written;
      return { written: distinct, inserted, updated, partitions };
    } catch (err) {
      await c.run('ROLLBACK').catch(() => {});
      const w = commits.map((x) => `${x.window.start}..${x.window.end}`).join(', ');
      throw wrapWriteError(err, `committing window${commits.length > 1 ? 's' : ''} ${w}`);
    } finally {
      await c.run('DELETE FROM _staging').catch(() => {});
    }
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
  async pendingPartitions(): Promise<string[]> {
    if (this.format === 'duckdb') return [];
    const sql =
      this.format === 'parquet'
        ? 'SELECT DISTINCT partition AS p FROM _pending_rows ORDER BY 1'
        : 'SELECT partition AS p FROM _parquet_pending ORDER BY 1';
    return (await queryRows<{ p: string }>(this.conn, sql)).map((r) => r.p);
  }

  /**
   * Rewrites every pending partition whole: query → .tmp file → fsync → rename over the old file
   * → fsync the directory → clear the pending mark. Readers only ever see complete files.
   */
  flushParquet(): Promise<FlushResult> {
    return this.exclusive(async () => {
      const result: FlushResult = { partitions: [], inserted: 0, updated: 0 };
      if (this.format === 'duckdb') return result;
      for (const p of await this.pendingPartitions()) {
        const counts = await this.rewritePartition(p);
        result.partitions.push(p);
        result.inserted += counts.inserted;
        result.updated += counts.updated;
      }
      return result;
    });
  }

  private async rewritePartition(p: string): Promise<{ inserted: number; updated: number }> {
    const c = this.conn;
    const dir = partitionDir(this.layout.parquetDir, p);
    const final = join(dir, PARTITION_FILE);
    const tmp = join(this.layout.tmpDir, `${p}-${process.pid}-${Date.now()}.parquet`);
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
    try {
      const count = await queryRows<{ n: bigint }>(c, `SELECT count(*) AS n FROM (${source})`);
      if (Number(count[0]?.n ?? 0) === 0) {
        await rm(dir, { recursive: true, force: true });
      } else {
        await c.run(
          `COPY (${source} ORDER BY started_at, session_id) TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)`,
        );
        await fsyncFile(tmp);
        crashPoint('mid-parquet-rewrite');
        await mkdir(dir, { recursive: true });
        await rename(tmp, final);
        await fsyncDir(dir);
      }
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw wrapWriteError(err, `rewriting Parquet partition date=${p}`);
    }
    if (this.format === 'parquet') await c.run(`DELETE FROM _pending_rows WHERE partition = ${sqlString(p)}`);
    else await c.run(`DELETE FROM _parquet_pending WHERE partition = ${sqlString(p)}`);
    return { inserted, updated };
  }

  /** Replaces the coverage rows by their merged intervals (keeps the table small). */
  compactCoverage(): Promise<void> {
    return this.exclusive(async () => {
      const c = this.conn;
      const merged = await this.coverage();
      await c.run('BEGIN TRANSACTION');
      try {
        await c.run('DELETE FROM _coverage');
        for (const w of merged) await c.run(`INSERT INTO _coverage VALUES ($1, $2, NULL, now())`, [w.start, w.end]);
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
    await this.queue.catch(() => {});
    this.closed = true;
    this.db.close();
  }
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
