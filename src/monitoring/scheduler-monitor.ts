/**
 * Monitoring for `session-etl schedule --http-port`: the metrics, fed by the scheduler's run hooks, and their HTTP
 * endpoint. The store is read at start and after each run (the scheduler is its writer), never on a scrape.
 * With accounts (docs/accounts.md) the state gauges stand for all accounts and `/healthz` for each.
 */
import type { RunSummary } from '../pipeline/run.js';
import type { VolumeRule } from '../store/volume-anomalies.js';
import type { Logger } from '../util/logger.js';
import { checkAccountsHealth, combineAccountStates } from './accounts-state.js';
import { checkHealth } from './health.js';
import { startMonitoringServer } from './http-server.js';
import type { AccountRun } from './metrics-file.js';
import { createMetrics, refreshedState, stateAfterRun, summaryOf, type RunRecord, type SessionEtlMetrics } from './metrics.js';
import { EMPTY_STATE, readAccountsMonitoredStates, readMonitoredState, type MonitoredState } from './read-state.js';

export interface SchedulerMonitorOptions {
  host: string;
  port: number;
  maxLagSeconds: number;
  dataDir: string;
  logger: Logger;
  /** Commands the jobs run, for zero-valued run counters from the start. */
  commands?: readonly string[];
  accounts?: readonly string[];
  volume?: VolumeRule;
}

export interface SchedulerMonitor {
  url: string;
  metrics: SessionEtlMetrics;
  onRunStart(job: string): void;
  /** A run ended; with accounts, `accounts` holds each account's part of it. */
  onRunEnd(job: string, result: { summary?: RunSummary; error?: unknown; durationMs: number }, accounts?: readonly AccountRun[]): Promise<void>;
  close(): Promise<void>;
}

export async function startSchedulerMonitor(o: SchedulerMonitorOptions): Promise<SchedulerMonitor> {
  const commands = o.commands ?? ['export'];
  const metrics = createMetrics({ processMetrics: true, commands, ...(o.accounts ? { accounts: o.accounts } : {}) });
  // Why the data directory could not be read, if it could not.
  let readError: string | undefined;
  let running = false;
  const attempt = async <T>(readIt: () => Promise<T>): Promise<T | null> => {
    try {
      const value = await readIt();
      readError = undefined;
      return value;
    } catch (err) {
      readError = (err as Error).message;
      o.logger.warn({ dataDir: o.dataDir, error: readError }, 'monitoring could not read the data directory; the gauges keep what the last run said');
      return null;
    }
  };
  const read = () => attempt(() => readMonitoredState(o.dataDir, Date.now(), undefined, o.volume));
  const readAccounts = (names: readonly string[]) => attempt(() => readAccountsMonitoredStates(o.dataDir, names, Date.now(), undefined, o.volume));
  // Each account's state, as its store and this process's runs tell it.
  const accountStates = new Map<string, MonitoredState>();
  if (o.accounts) {
    const read = await readAccounts(o.accounts);
    for (const a of o.accounts) accountStates.set(a, read?.get(a) ?? EMPTY_STATE);
    metrics.setState(combineAccountStates([...accountStates.values()]));
  } else {
    const initial = await read();
    if (initial) metrics.setState(initial);
  }
  const server = await startMonitoringServer({
    host: o.host,
    port: o.port,
    metrics: async () => ({ body: await metrics.metrics(), contentType: metrics.contentType }),
    health: () => {
      const opts = { nowMs: Date.now(), maxLagSeconds: o.maxLagSeconds, target: { dataDir: o.dataDir } };
      const h = o.accounts ? checkAccountsHealth(accountStates, opts) : checkHealth(metrics.state, opts);
      if (readError !== undefined) h.reasons.push(`the data directory ${o.dataDir} could not be read: ${readError}`);
      return { ...h, healthy: h.reasons.length === 0, running };
    },
  });
  return {
    url: server.url,
    metrics,
    onRunStart() {
      running = true;
      metrics.setRunning(true);
    },
    async onRunEnd(job, r, accounts) {
      const endedMs = Date.now();
      if (o.accounts && accounts) {
        // Read every account first, then update everything at once, so that no scrape sees a run counted but its store not read yet.
        const stored = await readAccounts(accounts.map((a) => a.account));
        const runs = accounts.map((a) => {
          const summary = a.summary ?? summaryOf(a.error);
          const record: RunRecord = { command: summary?.kind ?? job, account: a.account, durationMs: a.durationMs, endedAtMs: endedMs, ...(summary ? { summary } : {}), ...(a.error !== undefined ? { error: a.error } : {}) };
          return { record, read: stored?.get(a.account) ?? null };
        });
        for (const { record, read: storedState } of runs) {
          metrics.recordRun(record);
          const after = stateAfterRun(accountStates.get(record.account!) ?? EMPTY_STATE, record, endedMs);
          accountStates.set(record.account!, storedState ? refreshedState(after, storedState) : after);
        }
        metrics.setState(combineAccountStates([...accountStates.values()]));
      } else {
        const summary = r.summary ?? summaryOf(r.error);
        // Read first, as above. (With accounts and no account parts, the job failed before any account ran: nothing to read.)
        const state = o.accounts ? null : await read();
        metrics.recordRun({ command: summary?.kind ?? job, ...r, ...(summary ? { summary } : {}) });
        if (state) metrics.refreshState(state);
      }
      running = false;
      metrics.setRunning(false);
    },
    close: () => server.close(),
  };
}
