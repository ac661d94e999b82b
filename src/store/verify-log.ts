/**
 * What `session-etl verify` found, day by day (`_verified_days`; the run is a `_runs` row of kind
 * `verify`): read back by `status` and by the volume-anomaly check (a day found equal is a quiet day).
 */
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { queryRows, tableExists } from './duckdb.js';
import type { DayComparison } from './range-comparison.js';
import { z } from 'zod';

/** The latest `session-etl verify` of an account and what it found. */
export const LastVerificationSchema = z.object({
  runId: z.string(),
  /** When it ended (or started, while it runs or when it never finished), ISO. */
  at: z.string(),
  outcome: z.string(),
  range: z.object({ from: z.string(), to: z.string() }).nullable(),
  /** Days compared (whole or in part). */
  days: z.number(),
  source: z.number(),
  missing: z.number(),
  gone: z.number(),
  changed: z.number(),
  repaired: z.number(),
  deleted: z.number(),
  /** Days that differed, oldest first (at most 20). */
  differingDays: z.array(z.object({ date: z.string(), missing: z.number(), gone: z.number(), changed: z.number(), equalNow: z.boolean() })),
  error: z.string().nullable(),
});
export type LastVerification = z.infer<typeof LastVerificationSchema>;

export const VERIFIED_DAYS_DDL = `CREATE TABLE IF NOT EXISTS _verified_days (
  account VARCHAR NOT NULL DEFAULT '', day VARCHAR NOT NULL, run_id VARCHAR NOT NULL, verified_at TIMESTAMPTZ NOT NULL,
  whole BOOLEAN NOT NULL, source BIGINT, stored BIGINT, missing BIGINT, gone BIGINT, changed BIGINT,
  repaired BIGINT, deleted BIGINT, equal BOOLEAN NOT NULL, stored_after BIGINT)`;

/** One day of a verification (what the comparison found, source and stored counted before the verify). */
export interface VerifiedDay extends Omit<DayComparison, 'changedFields'> {
  /** The whole day lay inside the verified range (false: the range began or ended inside it). */
  whole: boolean;
  /** Missing and changed sessions committed by --repair, and gone ones removed by --delete-missing. */
  repaired: number;
  deleted: number;
  /** The store held exactly the source's sessions of the day when the verify ended. */
  equal: boolean;
  /** Sessions of the day stored when the verify ended. */
  storedAfter: number;
}

export async function recordVerifiedDays(
  conn: DuckDBConnection,
  account: string,
  runId: string,
  atS: number,
  days: readonly VerifiedDay[],
): Promise<void> {
  for (let i = 0; i < days.length; i += 500) {
    const part = days.slice(i, i + 500);
    const n = 14;
    await conn.run(
      `INSERT INTO _verified_days (account, day, run_id, verified_at, whole, source, stored, missing, gone, changed, repaired, deleted, equal, stored_after)
       VALUES ${part.map((_, j) => `(${Array.from({ length: n }, (_, k) => (k === 3 ? `to_timestamp($${j * n + k + 1}::DOUBLE)` : `$${j * n + k + 1}`)).join(', ')})`).join(', ')}`,
      part.flatMap((d) => [account, d.date, runId, atS, d.whole, d.source, d.stored, d.missing, d.gone, d.changed, d.repaired, d.deleted, d.equal, d.storedAfter]),
    );
  }
}

/** Whole days whose latest verify found them equal to the source, with the sessions stored then, by account. */
export async function readConfirmedDays(conn: DuckDBConnection): Promise<Map<string, Map<string, number>>> {
  const rows = !(await tableExists(conn, '_verified_days'))
    ? []
    : await queryRows<{ account: string; day: string; n: bigint | number }>(
        conn,
        `SELECT account, day, stored_after AS n FROM _verified_days WHERE whole
         QUALIFY row_number() OVER (PARTITION BY account, day ORDER BY verified_at DESC) = 1 AND equal`,
      );
  const out = new Map<string, Map<string, number>>();
  for (const r of rows) {
    const m = out.get(r.account) ?? out.set(r.account, new Map()).get(r.account)!;
    m.set(r.day, Number(r.n));
  }
  return out;
}

const SUMMED = ['source', 'missing', 'gone', 'changed', 'repaired', 'deleted'] as const;

/** The latest verify run of each account, with what it found (accounts without one are absent). */
export async function readLastVerifications(conn: DuckDBConnection): Promise<Map<string, LastVerification>> {
  if (!(await tableExists(conn, '_verified_days'))) return new Map();
  const runs = await queryRows<{ account: string; run_id: string; at: Date | string; outcome: string; f: Date | string | null; t: Date | string | null; error: string | null }>(
    conn,
    `SELECT account, run_id, coalesce(ended_at, started_at) AS at, outcome, range_from AS f, range_to AS t, error FROM _runs WHERE kind = 'verify'
     QUALIFY row_number() OVER (PARTITION BY account ORDER BY started_at DESC) = 1`,
  );
  const out = new Map<string, LastVerification>();
  if (!runs.length) return out;
  const days = await queryRows<{
    run_id: string; day: string; source: bigint; missing: bigint; gone: bigint; changed: bigint; repaired: bigint; deleted: bigint; equal: boolean;
  }>(
    conn,
    `SELECT run_id, day, source, missing, gone, changed, repaired, deleted, equal FROM _verified_days
     WHERE run_id IN (SELECT unnest($1::VARCHAR[])) ORDER BY day`,
    [listValue(runs.map((r) => r.run_id))],
  );
  const iso = (v: Date | string | null) => (v == null ? null : v instanceof Date ? v.toISOString().replace('.000Z', 'Z') : String(v));
  for (const r of runs) {
    const own = days.filter((d) => d.run_id === r.run_id);
    const sums = Object.fromEntries(SUMMED.map((k) => [k, own.reduce((n, d) => n + Number(d[k]), 0)])) as Record<(typeof SUMMED)[number], number>;
    const f = iso(r.f);
    const t = iso(r.t);
    out.set(r.account, {
      runId: r.run_id,
      at: iso(r.at)!,
      outcome: r.outcome,
      range: f && t ? { from: f, to: t } : null,
      days: own.length,
      ...sums,
      differingDays: own
        .filter((d) => Number(d.missing) + Number(d.gone) + Number(d.changed) > 0)
        .slice(0, 20)
        .map((d) => ({ date: d.day, missing: Number(d.missing), gone: Number(d.gone), changed: Number(d.changed), equalNow: d.equal })),
      error: r.error,
    });
  }
  return out;
}
