/** The run history (`_runs`) and the backfills begun and completed (`_backfills`, to resume one). */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Window } from '../time/windows.js';
import { clipText, MAX_ERROR_CHARS } from '../util/clip-text.js';
import { oneLine } from '../util/terminal-text.js';
import { join } from 'node:path';
import { queryRows, sqlString } from './duckdb.js';
import type { OutputFormat, StoreLayout } from './layout.js';
import { NDJSON_MAX_OBJECT_BYTES } from './ndjson.js';
import { hasDayFile } from './read-volume-anomalies.js';

/**
 * A run's error as kept and shown (status, state.json, the dashboard): one printable line (no
 * terminal control sequence from a server), clipped to twice MAX_ERROR_CHARS: a backstop leaving room
 * for what a run adds to the server's clipped text (pipeline/run.ts), for any other writer and older rows.
 */
export function boundRunError<T>(error: T): T | string {
  return typeof error === 'string' ? clipText(oneLine(error), 2 * MAX_ERROR_CHARS) : error;
}

export interface RunRow {
  run_id: string;
  /** The account the run was for ('' in a single-account store). */
  account: string;
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
  /** Read again as stored (not in sessions_written); null when not counted (an earlier release's, a died or failed run). */
  sessions_unchanged?: number | null;
  rejected: number;
  requests: number;
  retries: number;
  rate_limited: number;
  bisections: number;
  partitions_written: number;
  error: string | null;
  /** Time all workers spent paused by 429s (Retry-After) or rate-limit headers, ms. */
  paused_ms?: number | null;
  /** The pace learned from 429s, requests per second; null when never limited. */
  pace?: number | null;
}

/** Inserts a run, or updates the row of a run recorded before (its end, outcome and counts). */
export async function recordRun(conn: DuckDBConnection, run: RunRow): Promise<void> {
  await conn.run(
    `INSERT INTO _runs (run_id, kind, range_from, range_to, started_at, ended_at, outcome, windows, sessions_written,
       sessions_new, sessions_updated, rejected, requests, retries, rate_limited, bisections, partitions_written, error,
       paused_ms, pace, account, sessions_unchanged)
     VALUES ($1, $2, to_timestamp($3::DOUBLE), to_timestamp($4::DOUBLE), to_timestamp($5::DOUBLE),
       to_timestamp($6::DOUBLE), $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
     ON CONFLICT (run_id) DO UPDATE SET ended_at = excluded.ended_at, outcome = excluded.outcome, windows = excluded.windows,
       sessions_written = excluded.sessions_written, sessions_new = excluded.sessions_new,
       sessions_updated = excluded.sessions_updated, rejected = excluded.rejected, requests = excluded.requests,
       retries = excluded.retries, rate_limited = excluded.rate_limited, bisections = excluded.bisections,
       partitions_written = excluded.partitions_written, error = excluded.error,
       paused_ms = excluded.paused_ms, pace = excluded.pace, sessions_unchanged = excluded.sessions_unchanged`,
    [
      run.run_id, run.kind, run.range_from, run.range_to, run.started_at, run.ended_at, run.outcome, run.windows,
      run.sessions_written, run.sessions_new, run.sessions_updated, run.rejected, run.requests, run.retries,
      run.rate_limited, run.bisections, run.partitions_written, boundRunError(run.error),
      run.paused_ms == null ? null : Math.round(run.paused_ms), run.pace ?? null, run.account, run.sessions_unchanged ?? null,
    ],
  );
}

/**
 * Records every run still marked `running` as `died` (called by the lock's holder: none of them runs
 * any more), with what the store holds of it as its figures (committedUnder). Returns their run ids.
 */
export async function recordDiedRuns(
  conn: DuckDBConnection,
  foundBy: string,
  holder?: { runId?: string; pid: number; host: string },
  rows?: CommittedRows,
): Promise<string[]> {
  const runs = await queryRows<{ run_id: string; account: string; started: number }>(
    conn,
    `SELECT run_id, account, epoch_ms(started_at) AS started FROM _runs WHERE outcome = 'running'`,
  );
  for (const r of runs) {
    const who = holder?.runId === r.run_id ? `its process (pid ${holder.pid} on ${holder.host}) is gone` : 'its process is gone';
    const c = rows ? await committedUnder(conn, rows, { runId: r.run_id, account: r.account, startedMs: Number(r.started) }) : null;
    await conn.run(
      `UPDATE _runs SET outcome = 'died', ended_at = now(), error = $2${
        c ? ', windows = $3, sessions_written = $4, sessions_new = NULL, sessions_updated = NULL, sessions_unchanged = NULL, partitions_written = $5' : ''
      } WHERE run_id = $1 AND outcome = 'running'`,
      [r.run_id, `${who}: killed or crashed before recording an outcome; found by run ${foundBy}, which resumes its work`, ...(c ? [c.windows, c.sessions, c.days] : [])],
    );
  }
  return runs.map((r) => r.run_id);
}

/** Where a store keeps its committed rows, to count those of a run (committedUnder). */
interface CommittedRows {
  format: OutputFormat;
  /** A stored row's account, as SQL (store/shape.ts `account()`). */
  account: string;
  /** The store's local day files (format parquet), or null when they are in a bucket. */
  parquet: { dir: string; file: string } | null;
  /** Where committed records wait as files for the merge (_pending_files). */
  pendingDir: string;
}

export function committedRowsOf(store: { format: OutputFormat; shape: { account(): string }; layout: StoreLayout; dataset: { location: { kind: string } } }): CommittedRows {
  return {
    format: store.format,
    account: store.shape.account(),
    parquet: store.dataset.location.kind === 'local' ? { dir: store.layout.parquetDir, file: store.layout.partitionFile } : null,
    pendingDir: store.layout.pendingDir,
  };
}

/**
 * What a died run committed: its coverage rows (carrying its run id until a finished run compacts the
 * map), their UTC days, and the sessions fetched between its start and `untilMs` (one lock holder at a
 * time: no other run of the account fetched in between); null sessions when a bucket holds the day files.
 */
async function committedUnder(
  conn: DuckDBConnection,
  rows: CommittedRows,
  run: { runId: string; account: string; startedMs: number; untilMs?: number },
): Promise<{ windows: number; sessions: number | null; days: number }> {
  const windows = await queryRows<{ start_s: bigint | number; end_s: bigint | number }>(conn, 'SELECT start_s, end_s FROM _coverage WHERE run_id = $1', [run.runId]);
  const days = new Set<number>();
  for (const w of windows) {
    for (let d = Math.floor(Number(w.start_s) / 86_400); d * 86_400 < Number(w.end_s); d++) days.add(d);
  }
  const since = run.startedMs / 1000;
  const until = (run.untilMs ?? 8.64e15) / 1000;
  const own = ` AND ${rows.account} = ${sqlString(run.account)}`;
  const fetched = `extracted_at >= to_timestamp(${since}) AND extracted_at < to_timestamp(${until})${own}`;
  const key = `${rows.account} || '/' || session_id`;
  // Each session once: a record fetched in two windows is one session once merged.
  const sources = [`SELECT ${key} AS k FROM _pending_rows WHERE ${fetched}`];
  if (rows.format !== 'parquet') sources.push(`SELECT ${key} AS k FROM sessions WHERE ${fetched}`);
  else if (rows.parquet === null) return { windows: windows.length, sessions: null, days: days.size };
  else if (await hasDayFile(rows.parquet.dir, rows.parquet.file)) {
    const files = join(rows.parquet.dir, 'date=*', rows.parquet.file);
    sources.push(`SELECT ${key} AS k FROM read_parquet(${sqlString(files)}, hive_partitioning = true) WHERE ${fetched}`);
  }
  // Records committed as files and not merged yet (formats duckdb and both): their ids, read from the files.
  const files = await queryRows<{ file: string; account: string }>(
    conn,
    `SELECT file, account FROM _pending_files WHERE extracted_at >= ${since} AND extracted_at < ${until}${own}`,
  );
  if (files.length) {
    const paths = files.map((f) => join(rows.pendingDir, f.file));
    const lineage = files.map((f, i) => `(${sqlString(paths[i]!)}, ${sqlString(f.account)})`).join(', ');
    sources.push(
      `SELECT f.account || '/' || r.id AS k FROM read_json([${paths.map(sqlString).join(', ')}], columns = {id: 'VARCHAR'},
         format = 'newline_delimited', maximum_object_size = ${NDJSON_MAX_OBJECT_BYTES}, filename = true) r
       JOIN (VALUES ${lineage}) f(filename, account) USING (filename)`,
    );
  }
  const n = await queryRows<{ n: bigint | number }>(conn, `SELECT count(DISTINCT k) AS n FROM (${sources.join(' UNION ALL ')})`);
  return { windows: windows.length, sessions: Number(n[0]?.n ?? 0), days: days.size };
}

/**
 * `_runs` rows read while no run holds the store: one still marked running died, and shows what the
 * store holds of it (committedUnder) instead of the zeros it started with; new and updated are unknown.
 */
export async function withDiedRunFigures(conn: DuckDBConnection, rows: CommittedRows, runs: Array<Record<string, unknown>>): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for (const r of runs) {
    if (r.outcome !== 'running') {
      out.push(r);
      continue;
    }
    const account = String(r.account ?? '');
    const startedMs = Date.parse(String(r.started_at));
    // A later run of the account (it would have recorded this one as died; a row from an older release, say) ends the span.
    const later = runs.filter((x) => String(x.account ?? '') === account && Date.parse(String(x.started_at)) > startedMs).map((x) => Date.parse(String(x.started_at)));
    const c = await committedUnder(conn, rows, { runId: String(r.run_id), account, startedMs, ...(later.length ? { untilMs: Math.min(...later) } : {}) });
    out.push({ ...r, windows: c.windows, sessions_written: c.sessions, sessions_new: null, sessions_updated: null, sessions_unchanged: null, partitions_written: c.days });
  }
  return out;
}

/** The latest runs of an account (every account's with `account` undefined), newest first. */
export async function lastRuns(conn: DuckDBConnection, limit = 10, account?: string): Promise<Record<string, unknown>[]> {
  const rows = await queryRows(
    conn,
    `SELECT * FROM _runs ${account !== undefined ? 'WHERE account = $1 ' : ''}ORDER BY started_at DESC LIMIT ${Math.max(1, Math.floor(limit))}`,
    account !== undefined ? [account] : undefined,
  );
  return rows.map((r) => ({ ...r, error: boundRunError(r.error) }));
}

export async function lastRunsByAccount(conn: DuckDBConnection, limit = 10): Promise<Record<string, unknown>[]> {
  return queryRows(
    conn,
    `SELECT * FROM _runs QUALIFY row_number() OVER (PARTITION BY account ORDER BY started_at DESC) <= ${Math.max(1, Math.floor(limit))}
     ORDER BY account, started_at DESC`,
  );
}

/** The unfinished backfill of exactly this range by this account, if any (to resume it). */
export async function openBackfill(conn: DuckDBConnection, account: string, range: Window): Promise<{ startedAtMs: number } | undefined> {
  const rows = await queryRows<{ ms: number }>(
    conn,
    `SELECT epoch_ms(started_at) AS ms FROM _backfills WHERE account = $3 AND range_from = $1 AND range_to = $2 AND completed_at IS NULL
     ORDER BY started_at DESC LIMIT 1`,
    [range.start, range.end, account],
  );
  return rows[0] ? { startedAtMs: Number(rows[0].ms) } : undefined;
}

export async function beginBackfill(conn: DuckDBConnection, account: string, range: Window, runId: string): Promise<void> {
  await conn.run(`INSERT INTO _backfills (range_from, range_to, run_id, started_at, completed_at, account) VALUES ($1, $2, $3, now(), NULL, $4)`, [
    range.start,
    range.end,
    runId,
    account,
  ]);
}

export async function completeBackfill(conn: DuckDBConnection, account: string, range: Window): Promise<void> {
  await conn.run(
    `UPDATE _backfills SET completed_at = now() WHERE account = $3 AND range_from = $1 AND range_to = $2 AND completed_at IS NULL`,
    [range.start, range.end, account],
  );
}
