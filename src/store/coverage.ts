/** The coverage map: the windows whose data is committed, merged into intervals, per account ('' in a single-account store). */
import type { DuckDBConnection } from '@duckdb/node-api';
import { mergeIntervals } from '../time/intervals.js';
import type { Window } from '../time/windows.js';
import { inTransaction, queryRows } from './duckdb.js';
import { wrapWriteError } from './errors.js';
import { NULL_PARTITION } from './layout.js';

type CoverageRow = { start_s: bigint | number; end_s: bigint | number };

function merged(rows: readonly CoverageRow[]): Window[] {
  return mergeIntervals(rows.map((r) => ({ start: Number(r.start_s), end: Number(r.end_s) })));
}

/** The merged coverage map of an account: windows whose data is committed. */
export async function readCoverage(conn: DuckDBConnection, account: string): Promise<Window[]> {
  return merged(await queryRows<CoverageRow>(conn, 'SELECT start_s, end_s FROM _coverage WHERE account = $1 ORDER BY start_s', [account]));
}

/** Every account's merged coverage map (one read). */
export async function readAllCoverage(conn: DuckDBConnection): Promise<Map<string, Window[]>> {
  const sql = 'SELECT account, start_s, end_s FROM _coverage ORDER BY account, start_s';
  const rows = await queryRows<CoverageRow & { account: string }>(conn, sql);
  const by = new Map<string, CoverageRow[]>();
  for (const r of rows) (by.get(r.account) ?? by.set(r.account, []).get(r.account)!).push(r);
  return new Map([...by].map(([a, list]) => [a, merged(list)]));
}

/** An account's coverage committed after `sinceMs` (used to resume an interrupted backfill). */
export async function readCoverageSince(conn: DuckDBConnection, account: string, sinceMs: number): Promise<Window[]> {
  const sql = 'SELECT start_s, end_s FROM _coverage WHERE account = $1 AND committed_at >= to_timestamp($2::DOUBLE)';
  return merged(await queryRows<CoverageRow>(conn, sql, [account, sinceMs / 1000]));
}

/** Replaces the coverage rows by their merged intervals, account by account (keeps the table small). */
export async function compactCoverage(c: DuckDBConnection): Promise<void> {
  // A merged interval keeps its parts' earliest commit time: a resumed backfill takes only what was
  // committed after it started (readCoverageSince), so older coverage must not look like a run's own.
  const rows = await queryRows<{ account: string; start_s: bigint | number; end_s: bigint | number; ms: bigint | number }>(
    c,
    'SELECT account, start_s, end_s, epoch_ms(committed_at) AS ms FROM _coverage ORDER BY account, start_s, end_s',
  );
  const compacted: Array<{ account: string; start: number; end: number; ms: number }> = [];
  for (const r of rows) {
    const last = compacted[compacted.length - 1];
    const w = { account: r.account, start: Number(r.start_s), end: Number(r.end_s), ms: Number(r.ms) };
    if (last && last.account === w.account && w.start <= last.end) {
      last.end = Math.max(last.end, w.end);
      last.ms = Math.min(last.ms, w.ms);
    } else compacted.push(w);
  }
  if (compacted.length === rows.length) return;
  await inTransaction(c, async () => {
    await c.run('DELETE FROM _coverage');
    // A thousand rows a statement, however many accounts (each statement costs a round trip).
    for (let i = 0; i < compacted.length; i += 1000) {
      const part = compacted.slice(i, i + 1000);
      await c.run(
        `INSERT INTO _coverage (start_s, end_s, run_id, committed_at, account) VALUES ${part
          .map((_, j) => `($${4 * j + 1}, $${4 * j + 2}, NULL, to_timestamp($${4 * j + 3}::DOUBLE / 1000), $${4 * j + 4})`)
          .join(', ')}`,
        part.flatMap((w) => [w.start, w.end, w.ms, w.account]),
      );
    }
  }, (err) => wrapWriteError(err, 'compacting the coverage map'));
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
