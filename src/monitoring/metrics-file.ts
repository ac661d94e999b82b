/**
 * `--metrics-file` for cron runs: after an export or backfill, the same exposition as the
 * scheduler's /metrics (without Node's process metrics, which node_exporter has of its own) is
 * written for node_exporter's textfile collector, atomically: a temporary file in the same
 * directory (not ending in .prom, so the collector never reads it half-written), then a rename.
 */
import { basename, dirname, join } from 'node:path';
import type { RunSummary } from '../pipeline/run.js';
import { writeFileAtomic } from '../store/durable-fs.js';
import { createMetrics, summaryOf } from './metrics.js';
import { readMonitoredState } from './read-state.js';

/**
 * Runs `run`, then writes the metrics file whatever the outcome: counters hold this run's
 * figures, gauges the stored state read back from `dataDir`. A file that cannot be written is
 * reported on stderr and does not change the run's result.
 */
export async function writeMetricsAfter(
  path: string,
  command: string,
  dataDir: string,
  run: () => Promise<RunSummary>,
): Promise<RunSummary> {
  const t0 = Date.now();
  const metrics = createMetrics({ commands: [command] });
  const write = async (r: { summary?: RunSummary; error?: unknown }) => {
    metrics.recordRun({ command, ...r, durationMs: Date.now() - t0 });
    try {
      metrics.refreshState(await readMonitoredState(dataDir));
    } catch (err) {
      process.stderr.write(`warning: the metrics file's gauges could not read ${dataDir}: ${(err as Error).message}\n`);
    }
    try {
      await writeFileAtomic(path, await metrics.metrics(), { tmp: join(dirname(path), `.${basename(path)}.${process.pid}.tmp`), mode: 0o644 });
    } catch (err) {
      process.stderr.write(`warning: could not write --metrics-file ${path}: ${(err as Error).message}\n`);
    }
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
