/**
 * The all-accounts page of a many-account dashboard (no --account): one row per account, taken
 * from that account's own overview (overview.ts), so that the row and the account's page always
 * agree, and its health is `status --check`'s verdict (monitoring/health.ts) for that account.
 */
import type { DashboardRun, Overview } from './overview.js';

export interface AccountRow {
  account: string;
  /** Where the account's page is, on this dashboard. */
  link: string;
  /** Sessions stored for the account (null: not counted, e.g. a Parquet-only store with no dataset here). */
  sessions: number | null;
  /** The account's checkpoint: covered up to (ISO 8601), null while nothing is exported. */
  checkpoint: string | null;
  lagSeconds: number | null;
  /**
   * `status --check`'s verdict: `ok` (healthy), `failing` (the last run failed or died, or nothing
   * exported yet), `stale` (the checkpoint behind --max-lag, coverage holes or volume anomalies);
   * `reasons` are the account page's, one per problem.
   */
  health: { state: 'ok' | 'stale' | 'failing'; healthy: boolean; reasons: string[]; summary: string };
  /** The latest finished run (a died one included), as `status` shows it. */
  lastRun: (Pick<DashboardRun, 'runId' | 'kind' | 'outcome' | 'startedAt' | 'endedAt' | 'sessionsWritten' | 'sessionsNew' | 'sessionsUpdated'> & {
    /** Written, neither new nor updated (read again as stored); null when not counted. */
    sessionsUnchanged: number | null;
  }) | null;
  /** A run of the account going now. */
  running: boolean;
}

const STATE = { healthy: 'ok', lagging: 'stale', failing: 'failing' } as const;

export function accountRow(account: string, o: Overview): AccountRow {
  const last = o.runs.find((r) => r.outcome !== 'running') ?? null;
  const counted = last && last.sessionsWritten !== null && last.sessionsNew !== null && last.sessionsUpdated !== null;
  return {
    account,
    link: `/?account=${encodeURIComponent(account)}`,
    sessions: o.totalSessions,
    checkpoint: o.checkpoint,
    lagSeconds: o.lagSeconds,
    health: { state: STATE[o.health.state], healthy: o.health.reasons.length === 0, reasons: o.health.reasons, summary: o.health.summary },
    lastRun: last && {
      runId: last.runId,
      kind: last.kind,
      outcome: last.outcome,
      startedAt: last.startedAt,
      endedAt: last.endedAt,
      sessionsWritten: last.sessionsWritten,
      sessionsNew: last.sessionsNew,
      sessionsUpdated: last.sessionsUpdated,
      sessionsUnchanged: counted ? last.sessionsWritten! - last.sessionsNew! - last.sessionsUpdated! : null,
    },
    running: o.running !== null,
  };
}
