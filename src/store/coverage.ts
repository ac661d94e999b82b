/** The coverage map: the windows whose data is committed, merged into intervals. */
import type { DuckDBConnection } from '@duckdb/node-api';
import { mergeIntervals } from '../time/intervals.js';
import type { Window } from '../time/windows.js';
import { queryRows } from './duckdb.js';
import { wrapWriteError } from './errors.js';
import { NULL_PARTITION } from './layout.js';

/** The merged coverage map: windows whose data is committed. */
export async function readCoverage(conn: DuckDBConnection): Promise<Window[]> {
  const rows = await queryRows<{ start_s: bigint | number; end_s: bigint | number }>(
    conn,
    'SELECT start_s, end_s FROM _coverage ORDER BY start_s',
  );
  return mergeIntervals(rows.map((r) => ({ start: Number(r.start_s), end: Number(r.end_s) })));
}

/** Coverage committed after `sinceMs` (used to resume an interrupted backfill). */
export async function readCoverageSince(conn: DuckDBConnection, sinceMs: number): Promise<Window[]> {
  const rows = await queryRows<{ start_s: bigint; end_s: bigint }>(
    conn,
    'SELECT start_s, end_s FROM _coverage WHERE committed_at >= to_timestamp($1::DOUBLE)',
    [sinceMs / 1000],
  );
  return mergeIntervals(rows.map((r) => ({ start: Number(r.start_s), end: Number(r.end_s) })));
}

/** Replaces the coverage rows by their merged intervals (keeps the table small). */
export async function compactCoverage(c: DuckDBConnection): Promise<void> {
  // A merged interval keeps the earliest commit time of its parts: resuming a backfill takes only
  // what was committed after it started (readCoverageSince), so a run that failed or was stopped must
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
