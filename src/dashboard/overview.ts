/**
 * The dashboard's overview: health (healthy / lagging / failing, with the reasons in words), the
 * checkpoint, what is stored, the run going now, and the run history; and the all-accounts page's
 * row of each account, taken from its overview so that the two always agree.
 */
import { checkHealth } from '../monitoring/health.js';
import type { CommandTarget } from '../util/suggested-command.js';
import type { MonitoredRun, MonitoredState } from '../monitoring/read-state.js';
import type { LockHolder } from '../store/lock.js';
import type { RunningRun } from '../store/state-snapshot.js';
import type { StateReading } from './state-reader.js';

export type HealthState = 'healthy' | 'lagging' | 'failing';

export type DashboardRun = ReturnType<typeof runOf>;
export type LiveRun = ReturnType<typeof liveRunOf>;

export interface Overview {
  health: { state: HealthState; reasons: string[]; summary: string };
  checkpoint: string | null;
  lagSeconds: number | null;
  /** Sessions stored: the DuckDB table's rows, or the Parquet dataset's for format parquet. */
  totalSessions: number | null;
  /** Committed records not merged into the table yet. */
  pendingRows: number;
  /** Days of the dataset waiting for their rewrite by the next run, and meanwhile its count (else null). */
  pendingPartitions: string[];
  datasetSessions: number | null;
  readAt: string;
  rejected: number;
  format: string | null;
  coverageHoles: number;
  /** The snapshot's time, or when the store was read; null when there is none. */
  asOf: string | null;
  /** The snapshot a run published, or the store itself (the snapshot being a dead run's). */
  source: 'snapshot' | 'store';
  running: LiveRun | null;
  /** When `session-etl schedule` would run the nightly export, if it runs; null in a demo directory. */
  nextRun: { at: string; cron: string; timezone: string } | null;
  runs: DashboardRun[];
  account: string | null;
  /** A demo directory (`session-etl demo`): its gaps have no command, nothing schedules it. */
  demo: boolean;
  /** What to do when the directory has nothing to show yet. */
  notice: string | null;
}

export interface OverviewInput {
  reading: StateReading;
  /** The dataset's rows, when the snapshot has no table count, and while partitions wait for their rewrite. */
  parquetRows: number | null;
  datasetRows?: number | null;
  nowMs: number;
  maxLagSeconds: number;
  nextRun: Overview['nextRun'];
  account?: string | null;
  demo?: boolean;
  /** What the commands the health reasons suggest run against. */
  target?: CommandTarget;
}

export function buildOverview(i: OverviewInput): Overview {
  const { snapshot, liveHolder } = i.reading;
  const live = snapshot?.running && liveHolder && sameRun(liveHolder, snapshot.running.runId) ? snapshot.running : null;
  const runs = (snapshot?.lastRuns ?? []).map((r) => runOf(r, live?.runId ?? null, liveHolder));
  const finished = runs.filter((r) => r.outcome !== 'running');
  const success = finished.find((r) => r.outcome === 'succeeded' || r.outcome === 'nothing-to-do');
  const seconds = (s: string | null) => (s === null ? null : Date.parse(s) / 1000);
  const last = finished[0];
  const lastRun: MonitoredRun | null = last
    ? { runId: last.runId, kind: last.kind, outcome: last.outcome, startedAt: seconds(last.startedAt)!, endedAt: seconds(last.endedAt), error: last.error }
    : null;
  const state: MonitoredState = {
    checkpoint: seconds(snapshot?.checkpoint ?? null),
    coverageHoles: snapshot?.coverageHoles.length ?? 0,
    storedSessions: snapshot?.rows ?? null,
    lastRun,
    lastSuccessAt: success ? seconds(success.endedAt ?? success.startedAt) : null,
    volumeAnomalies: snapshot?.volumeAnomalies ?? [],
  };
  const h = checkHealth(state, { nowMs: i.nowMs, maxLagSeconds: i.maxLagSeconds, ...(i.target ? { target: i.target } : {}) });
  // The calendar shows each hole and its command: say so instead of pointing at `status`; the lag
  // in the page's one style of durations.
  const reasons = h.reasons.map((r) =>
    /coverage hole/.test(r)
      ? `${state.coverageHoles} coverage hole(s): the calendar shows each one and the backfill command that fills it`
      : /^checkpoint \S+ is .+ behind now/.test(r) && h.lagSeconds !== null
        ? `checkpoint ${snapshot!.checkpoint} is ${ago(h.lagSeconds)} behind now, more than the allowed ${ago(i.maxLagSeconds)} (--max-lag)`
        : r,
  );
  const anomalies = state.volumeAnomalies?.length ?? 0;
  const failing = !snapshot || lastRun?.outcome === 'failed' || lastRun?.outcome === 'died' || state.checkpoint === null;
  const healthState: HealthState = reasons.length === 0 ? 'healthy' : failing ? 'failing' : 'lagging';
  return {
    health: { state: healthState, reasons, summary: summaryOf(h.lagSeconds, lastRun, state.coverageHoles, live !== null, anomalies) },
    checkpoint: snapshot?.checkpoint ?? null,
    lagSeconds: h.lagSeconds,
    totalSessions: snapshot?.rows ?? i.parquetRows,
    pendingRows: snapshot?.pendingRows ?? 0,
    pendingPartitions: snapshot?.pendingPartitions ?? [],
    datasetSessions: snapshot?.rows != null && (snapshot.pendingPartitions?.length ?? 0) > 0 ? (i.datasetRows ?? null) : null,
    readAt: new Date(i.nowMs).toISOString(),
    rejected: snapshot?.rejected ?? 0,
    format: snapshot?.format ?? null,
    coverageHoles: state.coverageHoles,
    asOf: snapshot?.writtenAt ?? null,
    source: i.reading.source,
    running: live || liveHolder ? liveRunOf(live ?? { ...liveHolder!, runId: liveHolder!.runId ?? '' }, i.nowMs) : null,
    nextRun: i.nextRun,
    runs,
    account: i.account ?? null,
    demo: i.demo ?? false,
    notice: noticeOf(i.reading),
  };
}

/** What the page must say before its figures: none yet, or where they come from after a run died. */
function noticeOf(r: StateReading): string | null {
  if (!r.snapshot) {
    return 'No state snapshot (state.json) in this data directory yet: it is written by every backfill or export run. Run `session-etl backfill --from … --to …` or `session-etl export` first.';
  }
  const died = r.snapshot.lastRuns.find((x) => x.outcome === 'running')?.run_id;
  if (r.source === 'store') {
    return `The last run${died ? ` (${String(died)})` : ''} died (killed or crashed) before it published its last figures: these are read from the store itself, as \`session-etl status\` shows them. The next run records it and resumes its work.`;
  }
  if (r.deadRunSnapshot) {
    return `These figures are from the snapshot run ${r.deadRunSnapshot.runId} wrote at ${r.deadRunSnapshot.writtenAt.replace(/\.\d{3}Z$/, 'Z')} before it died: the store may hold more, and could not be read now. \`session-etl status\` reads it.`;
  }
  return null;
}

/** The health box's line under its word (healthy, lagging, failing), which it does not repeat. */
function summaryOf(lag: number | null, last: MonitoredRun | null, holes: number, running: boolean, anomalies = 0): string {
  const parts = [lag === null ? 'nothing exported yet' : `checkpoint ${ago(lag)} behind now`];
  if (last) parts.push(`last run ${last.outcome}`);
  parts.push(holes ? `${holes} coverage hole(s)` : 'no holes');
  if (anomalies) parts.push(`${anomalies} volume anomal${anomalies === 1 ? 'y' : 'ies'}`);
  if (running) parts.push('a run is going');
  const text = parts.join(', ');
  return text[0]!.toUpperCase() + text.slice(1);
}

/** A duration in the page's one style (assets/app.js `span`): `4.2 s`, `42 s`, `3 min 04 s`, `5 h 07 min`, `3 d 04 h`. */
export function ago(seconds: number): string {
  const s = Math.max(0, seconds);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 9.95) return `${s.toFixed(1)} s`;
  const t = Math.round(s);
  if (t < 60) return `${t} s`;
  if (t < 3600) return `${Math.floor(t / 60)} min ${pad(t % 60)} s`;
  const m = Math.round(t / 60);
  if (m < 48 * 60) return `${Math.floor(m / 60)} h ${pad(m % 60)} min`;
  const h = Math.round(t / 3600);
  return `${Math.floor(h / 24)} d ${pad(h % 24)} h`;
}

function runIdOf(holder: LockHolder): string | null {
  return holder.runId ?? /\(run ([^)]+)\)/.exec(holder.command)?.[1] ?? null;
}

function sameRun(holder: LockHolder, runId: string): boolean {
  const id = runIdOf(holder);
  return id === null || id === runId;
}

/** The run going now; `progressAt` is its last commit, the ETA from the pace so far (null before the first window). */
function liveRunOf(r: Pick<RunningRun, 'runId' | 'command' | 'pid' | 'startedAt' | 'progress'>, nowMs: number) {
  const p = r.progress;
  let eta: string | null = null;
  if (p && p.windowsDone > 0 && p.windowsTotal > p.windowsDone) {
    const elapsed = Date.parse(p.at) - Date.parse(r.startedAt);
    eta = new Date(Math.max(nowMs, Date.parse(p.at) + (elapsed / p.windowsDone) * (p.windowsTotal - p.windowsDone))).toISOString();
  }
  return {
    runId: r.runId,
    command: r.command,
    pid: r.pid,
    startedAt: r.startedAt,
    windowsTotal: p?.windowsTotal ?? null,
    windowsDone: p?.windowsDone ?? null,
    sessions: p?.sessions ?? null,
    progressAt: p?.at ?? null,
    eta,
  };
}

/**
 * A `_runs` row for the page; a row still marked running whose run is not the live one died. Its
 * session counts are null when not known (a run that died, its sessions in a bucket's day files).
 */
function runOf(r: Record<string, unknown>, liveRunId: string | null, liveHolder: LockHolder | null) {
  const str = (v: unknown) => (v == null ? null : String(v));
  const num = (v: unknown) => (v == null ? null : Number(v));
  const runId = String(r.run_id);
  let outcome = String(r.outcome);
  let error = str(r.error);
  if (outcome === 'running' && runId !== liveRunId && !(liveHolder && sameRun(liveHolder, runId))) {
    outcome = 'died';
    error = 'its process is gone (killed or crashed) without recording an outcome; the next run records it and resumes its work';
  }
  const startedAt = String(r.started_at);
  const endedAt = str(r.ended_at);
  return {
    runId,
    kind: String(r.kind),
    outcome,
    startedAt,
    endedAt,
    durationMs: endedAt ? Date.parse(endedAt) - Date.parse(startedAt) : null,
    rangeFrom: str(r.range_from),
    rangeTo: str(r.range_to),
    windows: num(r.windows) ?? 0,
    sessionsWritten: num(r.sessions_written),
    sessionsNew: num(r.sessions_new),
    sessionsUpdated: num(r.sessions_updated),
    rejected: num(r.rejected) ?? 0,
    requests: num(r.requests) ?? 0,
    retries: num(r.retries) ?? 0,
    rateLimited: num(r.rate_limited) ?? 0,
    pausedMs: num(r.paused_ms),
    partitionsWritten: num(r.partitions_written) ?? 0,
    error,
  };
}

/** A row of the all-accounts page (a many-account dashboard without --account). */
export interface AccountRow {
  account: string;
  link: string;
  /** Null: not counted, e.g. a Parquet-only store with no dataset here. */
  sessions: number | null;
  checkpoint: string | null;
  lagSeconds: number | null;
  /** `status --check`'s verdict for the account (monitoring/health.ts), with the account page's reasons. */
  health: { state: 'ok' | 'stale' | 'failing'; healthy: boolean; reasons: string[]; summary: string };
  /** The latest finished run (a died one included), as `status` shows it. */
  lastRun: (Pick<DashboardRun, 'runId' | 'kind' | 'outcome' | 'startedAt' | 'endedAt' | 'sessionsWritten' | 'sessionsNew' | 'sessionsUpdated'> & {
    /** Written, neither new nor updated (read again as stored); null when not counted. */
    sessionsUnchanged: number | null;
  }) | null;
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
