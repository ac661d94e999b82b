/**
 * `--metrics-file` for cron runs: the scheduler's /metrics exposition (without Node's process metrics) for
 * node_exporter's textfile collector, written atomically (the temporary name does not end in .prom, so the collector
 * never reads it half-written), mode exactly 0644 whatever the umask: node_exporter runs as another user.
 */
import type { RunSummary } from '../pipeline/run.js';
import { writeFileAtomic } from '../store/durable-fs.js';
import type { VolumeRule } from '../store/volume-anomalies.js';
import { combineAccountStates } from './accounts-state.js';
import { createMetrics, summaryOf, type SessionEtlMetrics } from './metrics.js';
import { readAccountsMonitoredStates, readMonitoredState, type MonitoredState } from './read-state.js';

/** Runs `run`, then writes the metrics file whatever the outcome (gauges read back from `dataDir`); never changes the result. */
export async function writeMetricsAfter(
  path: string,
  command: string,
  dataDir: string,
  run: () => Promise<RunSummary>,
  volume?: VolumeRule,
): Promise<RunSummary> {
  const t0 = Date.now();
  const metrics = createMetrics({ commands: [command] });
  const write = async (r: { summary?: RunSummary; error?: unknown }) => {
    metrics.recordRun({ command, ...r, durationMs: Date.now() - t0 });
    try {
      metrics.refreshState(await readMonitoredState(dataDir, Date.now(), undefined, volume));
    } catch (err) {
      process.stderr.write(`warning: the metrics file's gauges could not read ${dataDir}: ${(err as Error).message}\n`);
    }
    await writeMetricsFile(path, metrics);
  };
  let summary: RunSummary;
  try {
    summary = await run();
  } catch (error) {
    const s = summaryOf(error);
    await write({ error, ...(s ? { summary: s } : {}) });
    throw error;
  }
  await write({ summary });
  return summary;
}

/** One account's run, for the metrics file of a many-account command. */
export interface AccountRun {
  account: string;
  summary?: RunSummary;
  error?: unknown;
  durationMs: number;
}

/**
 * The metrics file of a many-account command (docs/accounts.md): per-account run counters, state gauges over all
 * accounts. A shard's file ("I/N") labels every series `shard`: node_exporter refuses the same series in two files.
 */
export async function writeAccountsMetrics(
  path: string,
  command: string,
  root: string,
  runs: readonly AccountRun[],
  o: { shard?: string; volume?: VolumeRule } = {},
): Promise<void> {
  const metrics = createMetrics({ commands: [command], accounts: runs.map((r) => r.account) });
  if (o.shard !== undefined) metrics.registry.setDefaultLabels({ shard: o.shard });
  // A run of this command that failed is the last run the gauges show (an account whose first run failed may have nothing stored to read it from).
  let failed: MonitoredState['lastRun'] = null;
  const own = new Map<string, MonitoredState>();
  for (const r of runs) {
    metrics.recordRun({ command, account: r.account, durationMs: r.durationMs, ...(r.summary ? { summary: r.summary } : {}), ...(r.error !== undefined ? { error: r.error } : {}) });
    own.set(r.account, metrics.state);
    if (metrics.state.lastRun?.outcome === 'failed') failed ??= metrics.state.lastRun;
  }
  let states: MonitoredState[];
  try {
    const read = await readAccountsMonitoredStates(root, runs.map((r) => r.account), Date.now(), undefined, o.volume);
    states = runs.map((r) => read.get(r.account)!);
  } catch (err) {
    process.stderr.write(`warning: the metrics file's gauges could not read ${root}: ${(err as Error).message}\n`);
    states = [...own.values()];
  }
  metrics.setState(combineAccountStates(states, failed));
  await writeMetricsFile(path, metrics);
}

/** A failure is a warning. */
async function writeMetricsFile(path: string, metrics: SessionEtlMetrics): Promise<void> {
  try {
    await writeFileAtomic(path, await metrics.metrics(), { mode: 0o644, exactMode: true });
  } catch (err) {
    process.stderr.write(`warning: could not write --metrics-file ${path}: ${(err as Error).message}\n`);
  }
}
