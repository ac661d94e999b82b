/** Is the export healthy? Shared by `/healthz` and `status --check`, so both give the same answer and reasons. */
import { humanDuration } from '../time/human-duration.js';
import { isoOf as iso } from '../time/windows.js';
import type { VolumeAnomaly } from '../store/volume-anomalies.js';
import type { MonitoredState } from './read-state.js';
import { dayArgs, suggestedCommand, type CommandTarget } from '../util/suggested-command.js';

/** The default --max-lag: a nightly export that missed one night is late by more than a day. */
export const DEFAULT_MAX_LAG_SECONDS = 26 * 3600;

export interface HealthOptions {
  nowMs: number;
  maxLagSeconds: number;
  /** What the commands the reasons suggest run against. */
  target?: CommandTarget;
}

export interface Health {
  healthy: boolean;
  /** One line per problem, each saying what is wrong and what to do; empty when healthy. */
  reasons: string[];
  checkpoint: string | null;
  lagSeconds: number | null;
  lastRun: { runId: string; kind: string; outcome: string; endedAt: string | null } | null;
}

function volumeAnomalyReason(a: VolumeAnomaly, target: CommandTarget = {}): string {
  return (
    `volume anomaly: ${a.date} holds ${a.sessions} sessions, expected about ${a.expected} (the median of its weekday over the previous weeks): ` +
    `the endpoint may have answered without part of that day; compare it with the source: \`${suggestedCommand('verify', dayArgs(a.date), target)}\``
  );
}

export function checkHealth(state: MonitoredState, o: HealthOptions): Health {
  const reasons: string[] = [];
  const lag = state.checkpoint !== null ? Math.round(o.nowMs / 1000 - state.checkpoint) : null;
  const run = state.lastRun;
  if (run?.outcome === 'failed') {
    reasons.push(`last run ${run.runId} (${run.kind}) failed${run.error ? `: ${run.error}` : ''}`);
  } else if (run?.outcome === 'died') {
    reasons.push(`last run ${run.runId} (${run.kind}), started ${iso(run.startedAt)}, never finished: its process was killed or crashed; run it again`);
  }
  if (state.checkpoint === null) {
    reasons.push('nothing exported yet: no checkpoint in this data directory');
  } else if (lag! > o.maxLagSeconds) {
    reasons.push(
      `checkpoint ${iso(state.checkpoint)} is ${humanDuration(lag!)} behind now, more than the allowed ${humanDuration(o.maxLagSeconds)} (--max-lag)`,
    );
  }
  if (state.coverageHoles > 0) {
    reasons.push(`${state.coverageHoles} coverage hole(s): run \`${suggestedCommand('status', [], o.target)}\` to see them and backfill each one`);
  }
  for (const a of state.volumeAnomalies ?? []) reasons.push(volumeAnomalyReason(a, o.target));
  return {
    healthy: reasons.length === 0,
    reasons,
    checkpoint: state.checkpoint !== null ? iso(state.checkpoint) : null,
    lagSeconds: lag,
    lastRun: run ? { runId: run.runId, kind: run.kind, outcome: run.outcome, endedAt: run.endedAt !== null ? iso(run.endedAt) : null } : null,
  };
}
