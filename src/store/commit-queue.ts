/**
 * Committing windows: each window's records (one NDJSON file), rejected records and coverage interval
 * in one transaction. Windows that arrive while a commit runs are grouped into the next (group commit):
 * each is still all-or-nothing, and a group costs one fsync. The sink merges the rows later (sink.ts).
 */
import type { Dirent } from 'node:fs';
import { mkdir, readdir, rm, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { describeWindow, type Window } from '../time/windows.js';
import { crashPoint } from '../util/crash-point.js';
import { redact } from '../util/redact.js';
import { writeNewFile } from '../util/temp-file.js';
import { inTransaction, queryRows } from './duckdb.js';
import { wrapWriteError } from './errors.js';
import { DIR_MODE, FILE_MODE, PENDING_FILE_NAME, type StoreLayout } from './layout.js';
import { RECORD_LINE_OF_ROW } from './ndjson.js';
import type { SerialQueue } from './serial-queue.js';
import type { StoreShape } from './shape.js';
import type { RecordFile, Sink } from './sink.js';

/** Most windows committed in one transaction. */
const MAX_GROUP = 64;

/** A record that failed validation, kept for the quarantine table when the policy says so. */
export interface RejectedRecord {
  sessionId: string | null;
  field: string;
  reason: string;
  raw: unknown;
}

export interface WindowCommit {
  /** '' in a single-account store. */
  account: string;
  window: Window;
  /** The records as newline-delimited JSON, every one already checked (pipeline/flatten.ts): DuckDB parses them. */
  ndjson: { bytes: Buffer; count: number; /** epoch seconds */ extractedAt: number };
  rejected: readonly RejectedRecord[];
  runId: string;
}

export interface CommitResult {
  /** Rows committed (counted as new or updated when they are merged). */
  written: number;
}

/** A window in the commit queue: its NDJSON already written to a file. */
type QueuedCommit = Omit<WindowCommit, 'ndjson'> & { file?: RecordFile };

export class CommitQueue {
  private fileSeq = 0;
  private pendingDirMade = false;
  private waiting: Array<{ commit: QueuedCommit; resolve: (r: CommitResult) => void; reject: (e: unknown) => void }> = [];
  private groupRunning = false;

  constructor(
    /** The store's main connection, and the queue that serialises writes on it. */
    private readonly conn: DuckDBConnection,
    private readonly writes: SerialQueue,
    private readonly layout: StoreLayout,
    private readonly sink: Sink,
  ) {}

  async commitWindow(commit: WindowCommit): Promise<CommitResult> {
    // Written now, so the body's memory is free while the window waits for its group.
    const file = commit.ndjson.count > 0 ? await this.writeFile(commit.window.start, commit.ndjson, commit.account) : undefined;
    const { account, window, rejected, runId } = commit;
    const queued: QueuedCommit = { account, window, rejected, runId, ...(file ? { file } : {}) };
    return new Promise<CommitResult>((resolve, reject) => {
      this.waiting.push({ commit: queued, resolve, reject });
      if (!this.groupRunning) void this.drainGroups();
    });
  }

  /**
   * One window's records as a file, fsynced when the file itself is what the commit lists. Named by
   * window start: merges read files in that order, so rows land in the table roughly by time.
   */
  private async writeFile(start: number, ndjson: WindowCommit['ndjson'], account: string): Promise<RecordFile> {
    const keep = this.sink.keepsFiles;
    if (keep && !this.pendingDirMade) {
      await mkdir(this.layout.pendingDir, { recursive: true, mode: DIR_MODE });
      this.pendingDirMade = true;
    }
    const dir = keep ? this.layout.pendingDir : this.layout.tmpDir;
    const name = `rows-${String(start).padStart(12, '0')}-${process.pid}-${++this.fileSeq}`;
    const path = await writeNewFile((suffix) => join(dir, `${name}-${suffix}.ndjson`), ndjson.bytes, { mode: FILE_MODE, sync: keep });
    return { path, count: ndjson.count, extractedAt: ndjson.extractedAt, account };
  }

  /**
   * Rows an earlier version left in `_pending_rows` (a table store's) become record files, one per
   * account and fetch time, listed and removed from `_pending_rows` in one transaction (before it, a
   * crash leaves the files unlisted, removed at the next open). A Parquet-only store's rows wait there by design.
   */
  async adoptPendingRows(shape: StoreShape): Promise<void> {
    if (!this.sink.keepsFiles) return;
    const c = this.conn;
    const any = await queryRows<{ n: bigint }>(c, 'SELECT count(*) AS n FROM (SELECT 1 FROM _pending_rows LIMIT 1)');
    if (Number(any[0]?.n ?? 0) === 0) return;
    const account = shape.account();
    await c.run(
      `CREATE OR REPLACE TEMP TABLE _adopt AS SELECT dense_rank() OVER (ORDER BY ${account}, extracted_at) AS g, ${account} AS a,
         coalesce(epoch(extracted_at), 0) AS e, ${RECORD_LINE_OF_ROW} AS l, started_at, session_id FROM _pending_rows`,
    );
    const files: RecordFile[] = [];
    try {
      const groups = await queryRows<{ g: bigint; a: string; e: number; s: number | null }>(
        c,
        'SELECT g, any_value(a) AS a, any_value(e) AS e, min(epoch(started_at)) AS s FROM _adopt GROUP BY g ORDER BY g',
      );
      for (const g of groups) {
        const lines = await queryRows<{ l: string }>(c, `SELECT l FROM _adopt WHERE g = ${g.g} ORDER BY started_at, session_id`);
        const bytes = Buffer.from(lines.map((r) => r.l).join('\n'), 'utf8');
        files.push(await this.writeFile(Math.floor(g.s ?? 0), { bytes, count: lines.length, extractedAt: Number(g.e) }, g.a));
      }
      await inTransaction(
        c,
        async () => {
          await this.sink.commitFiles(c, files);
          await c.run('DELETE FROM _pending_rows');
        },
        (err) => wrapWriteError(err, 'turning the rows an earlier version left in _pending_rows into record files'),
      );
    } catch (err) {
      for (const f of files) await rm(f.path, { force: true }).catch(() => {});
      throw err;
    } finally {
      await c.run('DROP TABLE IF EXISTS _adopt').catch(() => {});
    }
  }

  private async drainGroups(): Promise<void> {
    this.groupRunning = true;
    try {
      while (this.waiting.length) {
        const group = this.waiting.splice(0, MAX_GROUP);
        const files = group.flatMap((g) => (g.commit.file ? [g.commit.file] : []));
        try {
          await this.writes.run(() => this.commitGroup(group.map((g) => g.commit)));
          crashPoint('after-commit');
          group.forEach((g) => g.resolve({ written: g.commit.file?.count ?? 0 }));
          await this.sink.afterCommit(files);
        } catch (err) {
          group.forEach((g) => g.reject(err));
          for (const f of files) await rm(f.path, { force: true }).catch(() => {});
        }
      }
    } finally {
      this.groupRunning = false;
    }
  }

  private async commitGroup(commits: QueuedCommit[]): Promise<void> {
    const c = this.conn;
    const files = commits.flatMap((x) => (x.file ? [x.file] : []));
    if (files.length) await this.sink.beforeCommit?.(files);
    const w = () => commits.map((x) => describeWindow(x.window)).join(', ');
    await inTransaction(c, async () => {
      if (files.length) await this.sink.commitFiles(c, files);
      for (const x of commits) {
        for (const r of x.rejected) {
          await c.run(
            `INSERT INTO rejected_sessions (session_id, field, reason, raw, window_start, window_end, run_id, rejected_at, account)
             VALUES ($1, $2, $3, $4, to_timestamp($5::DOUBLE), to_timestamp($6::DOUBLE), $7, now(), $8)`,
            [r.sessionId, r.field, r.reason, redact(safeJson(r.raw)), x.window.start, x.window.end, x.runId, x.account],
          );
        }
      }
      crashPoint('mid-transaction');
      const values = commits.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, now(), $${4 * i + 4})`).join(', ');
      await c.run(
        `INSERT INTO _coverage (start_s, end_s, run_id, committed_at, account) VALUES ${values}`,
        commits.flatMap((x) => [x.window.start, x.window.end, x.runId, x.account]),
      );
    }, (err) => wrapWriteError(err, `committing window${commits.length > 1 ? 's' : ''} ${w()}`));
  }
}

/** Removes files of windows whose transaction never committed (a crash before the commit); only names session-etl gives. */
export async function dropUncommittedFiles(conn: DuckDBConnection, pendingDir: string): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(pendingDir, { withFileTypes: true });
  } catch {
    return;
  }
  const listed = new Set((await queryRows<{ file: string }>(conn, 'SELECT file FROM _pending_files')).map((r) => r.file));
  for (const e of entries) {
    if (e.isFile() && PENDING_FILE_NAME.test(e.name) && !listed.has(e.name)) await unlink(join(pendingDir, e.name)).catch(() => {});
  }
  if (listed.size === 0) await rmdir(pendingDir).catch(() => {});
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? 'null';
  } catch {
    return String(v);
  }
}
