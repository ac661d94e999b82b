/** The run history (`_runs`) and the backfills begun and completed (`_backfills`, to resume one). */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Window } from '../time/windows.js';
import { clipText, MAX_ERROR_CHARS } from '../util/clip-text.js';
import { oneLine } from '../util/terminal-text.js';
import { queryRows } from './duckdb.js';

/**
 * Longest `_runs.error` kept: a backstop. A run clips the server's text to MAX_ERROR_CHARS and adds
 * what is committed and what to do (src/pipeline/run.ts); this leaves room for that, and clips any
 * other writer, and rows recorded whole before the bound, when they are read.
 */
export const MAX_RUN_ERROR_CHARS = 2 * MAX_ERROR_CHARS;

/**
 * A run's error as kept and shown (status, state.json, the dashboard): one printable line (no
 * terminal control sequence from a server), clipped to MAX_RUN_ERROR_CHARS.
 */
export function boundRunError<T>(error: T): T | string {
  return typeof error === 'string' ? clipText(oneLine(error), MAX_RUN_ERROR_CHARS) : error;
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
       paused_ms, pace, account)
     VALUES ($1, $2, to_timestamp($3::DOUBLE), to_timestamp($4::DOUBLE), to_timestamp($5::DOUBLE),
       to_timestamp($6::DOUBLE), $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
     ON CONFLICT (run_id) DO UPDATE SET ended_at = excluded.ended_at, outcome = excluded.outcome, windows = excluded.windows,
       sessions_written = excluded.sessions_written, sessions_new = excluded.sessions_new,
       sessions_updated = excluded.sessions_updated, rejected = excluded.rejected, requests = excluded.requests,
       retries = excluded.retries, rate_limited = excluded.rate_limited, bisections = excluded.bisections,
       partitions_written = excluded.partitions_written, error = excluded.error,
       paused_ms = excluded.paused_ms, pace = excluded.pace`,
    [
      run.run_id, run.kind, run.range_from, run.range_to, run.started_at, run.ended_at, run.outcome, run.windows,
      run.sessions_written, run.sessions_new, run.sessions_updated, run.rejected, run.requests, run.retries,
      run.rate_limited, run.bisections, run.partitions_written, boundRunError(run.error),
      run.paused_ms == null ? null : Math.round(run.paused_ms), run.pace ?? null, run.account,
    ],
  );
}

/**
 * Records every run still marked `running` as `died` (ended_at = now): called by a writer holding the
 * lock, so none of them is running any more (killed, or crashed, without recording its outcome).
 * Returns their run ids.
 */
export async function recordDiedRuns(
  conn: DuckDBConnection,
  foundBy: string,
  holder?: { runId?: string; pid: number; host: string },
): Promise<string[]> {
  const rows = await queryRows<{ run_id: string }>(conn, `SELECT run_id FROM _runs WHERE outcome = 'running'`);
  for (const { run_id } of rows) {
    const who = holder?.runId === run_id ? `its process (pid ${holder.pid} on ${holder.host}) is gone` : 'its process is gone';
    await conn.run(`UPDATE _runs SET outcome = 'died', ended_at = now(), error = $2 WHERE run_id = $1 AND outcome = 'running'`, [
      run_id,
      `${who}: killed or crashed before recording an outcome; found by run ${foundBy}, which resumes its work`,
    ]);
  }
  return rows.map((r) => r.run_id);
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

/** The latest `limit` runs of each account, newest first. */
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
