/** `status --check`: the scheduler's /healthz verdict; exit 0 and one `OK` line, or exit 1 and one line per reason. */
import type { DatasetLocation } from '../store/dataset/location.js';
import { checkHealth } from '../monitoring/health.js';
import { readMonitoredState } from '../monitoring/read-state.js';
import { humanDuration } from '../time/human-duration.js';
import type { VolumeRule } from '../store/volume-anomalies.js';
import { ExitCode } from './exit-codes.js';
import { parseMaxLag, warnIfMaxLagBelowSettle } from './monitoring-options.js';
import { UsageError } from './usage-error.js';

export async function statusCheck(dataDir: string, flags: { check?: boolean; maxLag?: string; json?: boolean }, settle: string, dataset?: DatasetLocation, volume?: VolumeRule): Promise<number> {
  if (!flags.check) throw new UsageError('--max-lag goes with --check');
  const maxLagSeconds = parseMaxLag(flags.maxLag);
  warnIfMaxLagBelowSettle(maxLagSeconds, settle);
  const nowMs = Date.now();
  const health = checkHealth(await readMonitoredState(dataDir, nowMs, dataset, volume), { nowMs, maxLagSeconds, target: { dataDir } });
  if (flags.json) {
    process.stdout.write(JSON.stringify({ dataDir, ...health }) + '\n');
  } else if (health.healthy) {
    process.stdout.write(`OK: checkpoint ${health.checkpoint} (${humanDuration(health.lagSeconds ?? 0)} behind now), last run ${health.lastRun?.outcome ?? 'none'}\n`);
  } else {
    for (const r of health.reasons) process.stdout.write(`UNHEALTHY: ${r}\n`);
  }
  return health.healthy ? ExitCode.ok : ExitCode.runFailed;
}
