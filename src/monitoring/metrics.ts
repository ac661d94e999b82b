/**
 * The Prometheus metrics, in a registry of their own (a test, or a process watching two data directories, holds
 * several). Gauges come from the stored state, so they are right after a restart; counters from this process's
 * runs (Prometheus' counter semantics handle the reset at a restart).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RunSummary } from '../pipeline/run.js';
import { redact } from '../util/redact.js';
import { EMPTY_STATE, type MonitoredState } from './read-state.js';

/** Outcomes of `session_etl_runs_total`: RunSummary's, and `failed` for a run that ended before it had one. */
export const RUN_OUTCOMES = ['succeeded', 'nothing-to-do', 'interrupted', 'failed'] as const;

export interface MetricsOptions {
  /** Node's default process metrics. Off for a textfile: node_exporter has its own `process_*`. */
  processMetrics?: boolean;
  /** Commands whose `session_etl_runs_total` series start at 0 for every outcome, so `increase()` sees the first failure. */
  commands?: readonly string[];
  now?: () => number;
  /** Many accounts (docs/accounts.md): the per-run series carry an `account` label and start at 0 for each. */
  accounts?: readonly string[];
}

/** One run that ended, successfully or not. */
export interface RunRecord {
  command: string;
  /** Returned, or carried by the error (RunFailedError, RunInterruptedError). */
  summary?: RunSummary;
  error?: unknown;
  /** Wall time (the summary's when there is one). */
  durationMs: number;
  endedAtMs?: number;
  account?: string;
}

export type SessionEtlMetrics = ReturnType<typeof createMetrics>;

const DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14_400];

/** The summary a run's error carries (RunFailedError, RunInterruptedError). */
export function summaryOf(error: unknown): RunSummary | undefined {
  return (error as { summary?: RunSummary } | undefined)?.summary;
}

export function createMetrics(o: MetricsOptions = {}) {
  const now = o.now ?? Date.now;
  const registry = new Registry();
  const registers = [registry];
  let state: MonitoredState = EMPTY_STATE;
  const orNaN = (v: number | null) => v ?? Number.NaN;

  // The gauges of the stored state, read at scrape time: name, help, value.
  const stateGauges: [string, string, (s: MonitoredState) => number][] = [
    ['session_etl_checkpoint_timestamp_seconds', 'The incremental checkpoint: everything before it is stored without gaps (NaN until the first export)', (s) => orNaN(s.checkpoint)],
    ['session_etl_checkpoint_lag_seconds', 'Now minus the checkpoint, at scrape time (NaN until the first export)', (s) => (s.checkpoint !== null ? now() / 1000 - s.checkpoint : Number.NaN)],
    ['session_etl_coverage_holes', 'Gaps in the stored coverage after the checkpoint (each needs a backfill)', (s) => s.coverageHoles],
    ['session_etl_last_run_timestamp_seconds', 'When the latest run (any outcome) ended, or started when it never finished (NaN when none)', (s) => (s.lastRun ? (s.lastRun.endedAt ?? s.lastRun.startedAt) : Number.NaN)],
    ['session_etl_last_success_timestamp_seconds', 'When the latest succeeded (or nothing-to-do) run ended (NaN when none)', (s) => orNaN(s.lastSuccessAt)],
    ['session_etl_last_run_failed', '1 when the latest run failed or never finished, else 0', (s) => (s.lastRun?.outcome === 'failed' || s.lastRun?.outcome === 'died' ? 1 : 0)],
    // A count of days; not `…_days`, which Prometheus' naming rules (promtool check metrics) read as a unit of time.
    ['session_etl_volume_anomalies', 'Volume anomalies: finished days holding far fewer sessions than their weekday usually does (docs/data-quality.md "Volume anomalies"); with accounts, summed over them', (s) => s.volumeAnomalies?.length ?? 0],
    ['session_etl_stored_sessions', 'Rows of the sessions table (NaN for a Parquet-only store)', (s) => orNaN(s.storedSessions)],
  ];
  for (const [name, help, value] of stateGauges) {
    new Gauge({ name, help, registers, collect() { this.set(value(state)); } });
  }
  const inProgress = new Gauge({ name: 'session_etl_run_in_progress', help: '1 while this process runs an export or backfill', registers });

  const acc = o.accounts ? ['account'] : [];
  const counter = (name: string, help: string, labels: string[] = []) => new Counter({ name, help, labelNames: [...labels, ...acc], registers });
  const runs = counter('session_etl_runs_total', 'Runs ended by this process, by command and outcome', ['command', 'outcome']);
  const duration = new Histogram({
    name: 'session_etl_run_duration_seconds',
    help: 'Wall time of the runs of this process',
    labelNames: ['command', ...acc],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const written = counter(
    'session_etl_sessions_written_total',
    'Sessions stored by the runs of this process: new, or replacing a stored version whose content differs (re-read unchanged ones are session_etl_sessions_unchanged_total)',
  );
  const unchanged = counter(
    'session_etl_sessions_unchanged_total',
    'Sessions the runs of this process read again as they were stored (every export re-reads its lookback): not written',
  );
  const requests = counter(
    'session_etl_requests_total',
    'HTTP requests to the reporting endpoint: completed (answered, or the last failed attempt), retried (a transient failure, retried), rate_limited (a 429)',
    ['outcome'],
  );
  const rateLimited = counter('session_etl_rate_limited_total', '429 answers from the reporting endpoint');
  const paused = counter('session_etl_paused_seconds_total', 'Time all workers were paused by rate limiting');

  // Without accounts, one set of series with no account label (as before accounts existed).
  for (const a of o.accounts ?? [undefined]) {
    const l = a === undefined ? {} : { account: a };
    for (const command of o.commands ?? []) {
      for (const outcome of RUN_OUTCOMES) runs.inc({ command, outcome, ...l }, 0);
      duration.zero({ command, ...l });
    }
    for (const outcome of ['completed', 'retried', 'rate_limited']) requests.inc({ outcome, ...l }, 0);
  }
  if (o.processMetrics) collectDefaultMetrics({ register: registry });

  return {
    registry,
    /** The exposition's Content-Type. */
    contentType: registry.contentType,
    get state(): MonitoredState {
      return state;
    },
    /** Replaces everything the gauges know from the data directory. */
    setState(s: MonitoredState): void {
      state = s;
    },
    /** The state read back after a run this process recorded. */
    refreshState(s: MonitoredState): void {
      state = refreshedState(state, s);
    },
    setRunning(running: boolean): void {
      inProgress.set(running ? 1 : 0);
    },
    /** Counts a run that ended and updates the state-derived gauges from its summary. */
    recordRun(r: RunRecord): void {
      const s = r.summary;
      const l = o.accounts && r.account !== undefined ? { account: r.account } : {};
      runs.inc({ command: r.command, outcome: s?.outcome ?? 'failed', ...l });
      duration.observe({ command: r.command, ...l }, (s?.durationMs ?? r.durationMs) / 1000);
      if (s) {
        written.inc(l, s.sessions.written);
        unchanged.inc(l, s.sessions.unchanged ?? 0);
        const rl = Math.min(s.rateLimited, s.retries);
        requests.inc({ outcome: 'completed', ...l }, Math.max(0, s.requests - s.retries));
        requests.inc({ outcome: 'retried', ...l }, s.retries - rl);
        requests.inc({ outcome: 'rate_limited', ...l }, rl);
        rateLimited.inc(l, s.rateLimited);
        paused.inc(l, s.pausedMs / 1000);
      }
      state = stateAfterRun(state, r, r.endedAtMs ?? now());
    },
    metrics: (): Promise<string> => registry.metrics(),
  };
}

/** The state once a run ended: until the store is read again, what its summary says is the freshest. */
export function stateAfterRun(state: MonitoredState, r: RunRecord, endedAtMs: number): MonitoredState {
  const s = r.summary;
  const outcome = s?.outcome ?? 'failed';
  const endedAt = endedAtMs / 1000;
  const runId = s?.runId ?? `${r.command}-${Math.round(endedAt)}`;
  const error = s?.error ?? (r.error instanceof Error ? redact(r.error.message) : r.error != null ? redact(String(r.error)) : null);
  return {
    ...state,
    ...(s?.checkpoint ? { checkpoint: Date.parse(s.checkpoint) / 1000 } : {}),
    ...(s ? { coverageHoles: s.coverageHoles.length } : {}),
    ...(s?.volumeAnomalies ? { volumeAnomalies: s.volumeAnomalies } : {}),
    lastRun: { runId, kind: s?.kind ?? r.command, outcome, startedAt: endedAt - r.durationMs / 1000, endedAt, error },
    ...(outcome === 'succeeded' || outcome === 'nothing-to-do' ? { lastSuccessAt: endedAt } : {}),
  };
}

/** The store's word wins, except that a run which ended before it was logged there (lock held) stays the last run. */
export function refreshedState(mineState: MonitoredState, read: MonitoredState): MonitoredState {
  const mine = mineState.lastRun;
  const logged = mine === null || (read.lastRun !== null && (read.lastRun.runId === mine.runId || read.lastRun.startedAt >= mine.startedAt - 1));
  return logged ? read : { ...read, lastRun: mine };
}
