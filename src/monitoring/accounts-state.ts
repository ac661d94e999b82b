/** Monitoring over many accounts (docs/accounts.md): one state for the gauges, one health answer for all. */
import { checkHealth, type Health, type HealthOptions } from './health.js';
import type { MonitoredRun, MonitoredState } from './read-state.js';

/**
 * The oldest checkpoint and last success (null while any account has none), holes and stored sessions summed, and
 * as the last run a failed one when any account's latest failed or died (`failed`, this process's, first), else the latest.
 */
export function combineAccountStates(states: readonly MonitoredState[], failed: MonitoredRun | null = null): MonitoredState {
  const min = (xs: Array<number | null>) => (xs.some((x) => x === null) || !xs.length ? null : Math.min(...(xs as number[])));
  const stored = states.map((s) => s.storedSessions).filter((x): x is number => x !== null);
  const lastRuns = states.map((s) => s.lastRun).filter((x): x is MonitoredRun => x !== null);
  return {
    checkpoint: min(states.map((s) => s.checkpoint)),
    coverageHoles: states.reduce((n, s) => n + s.coverageHoles, 0),
    storedSessions: stored.length ? stored.reduce((a, b) => a + b, 0) : null,
    lastRun:
      failed ??
      lastRuns.find((x) => x.outcome === 'failed' || x.outcome === 'died') ??
      [...lastRuns].sort((a, b) => (b.endedAt ?? b.startedAt) - (a.endedAt ?? a.startedAt))[0] ??
      null,
    lastSuccessAt: min(states.map((s) => s.lastSuccessAt)),
    // Summed, as the holes are: the gauge counts every account's anomalous days.
    volumeAnomalies: states.flatMap((s) => s.volumeAnomalies ?? []),
  };
}

/** Each account's health, and the whole: healthy when every account is; reasons read `account NAME: …`. */
export function checkAccountsHealth(states: ReadonlyMap<string, MonitoredState>, o: HealthOptions): Health & { accounts: Array<{ account: string } & Health> } {
  const accounts = [...states].map(([account, state]) => ({ account, ...checkHealth(state, { ...o, target: { ...o.target, account } }) }));
  const whole = checkHealth(combineAccountStates([...states.values()]), o);
  const reasons = accounts.flatMap((a) => a.reasons.map((r) => `account ${a.account}: ${r}`));
  return { ...whole, healthy: reasons.length === 0, reasons, accounts };
}
