/**
 * Monitoring for `session-etl schedule --http-port`: the metrics registry, fed by the scheduler's
 * run hooks, and the HTTP endpoint serving it. The store is read at start and after each run (the
 * scheduler is the store's writer: between its runs nobody else should be), never on a scrape.
 */
import type { RunSummary } from '../pipeline/run.js';
import type { Logger } from '../util/logger.js';
import { checkHealth } from './health.js';
import { startMonitoringServer } from './http-server.js';
import { createMetrics, summaryOf, type SessionEtlMetrics } from './metrics.js';
import { readMonitoredState, type MonitoredState } from './read-state.js';

export interface SchedulerMonitorOptions {
  host: string;
  port: number;
  maxLagSeconds: number;
  dataDir: string;
  logger: Logger;
  /** Commands the jobs run, for zero-valued run counters from the start. */
  commands?: readonly string[];
}

export interface SchedulerMonitor {
  /** Base URL of the endpoint. */
  url: string;
  metrics: SessionEtlMetrics;
  onRunStart(job: string): void;
  onRunEnd(job: string, result: { summary?: RunSummary; error?: unknown; durationMs: number }): Promise<void>;
  close(): Promise<void>;
}

export async function startSchedulerMonitor(o: SchedulerMonitorOptions): Promise<SchedulerMonitor> {
  const metrics = createMetrics({ processMetrics: true, commands: o.commands ?? ['export'] });
  let readError: string | null = null;
  let running = false;
  const read = async (): Promise<MonitoredState | null> => {
    try {
      const state = await readMonitoredState(o.dataDir);
      readError = null;
      return state;
    } catch (err) {
      readError = (err as Error).message;
      o.logger.warn({ dataDir: o.dataDir, error: readError }, 'monitoring could not read the data directory; the gauges keep what the last run said');
      return null;
    }
  };
  const initial = await read();
  if (initial) metrics.setState(initial);
  const server = await startMonitoringServer({
    host: o.host,
    port: o.port,
    metrics: async () => ({ body: await metrics.metrics(), contentType: metrics.contentType }),
    health: () => {
      const h = checkHealth(metrics.state, { nowMs: Date.now(), maxLagSeconds: o.maxLagSeconds });
      if (readError) h.reasons.push(`the data directory ${o.dataDir} could not be read: ${readError}`);
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
    async onRunEnd(job, r) {
      const summary = r.summary ?? summaryOf(r.error);
      // Read first, then update everything at once, so that no scrape sees the run counted but the store not read yet.
      const state = await read();
      metrics.recordRun({ command: summary?.kind ?? job, ...r, ...(summary ? { summary } : {}) });
      if (state) metrics.refreshState(state);
      running = false;
      metrics.setRunning(false);
    },
    close: () => server.close(),
  };
}
