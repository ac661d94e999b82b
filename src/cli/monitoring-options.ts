/** Flags of the monitoring features (`schedule --http-port`, `--metrics-file`, `status --check`), checked before anything runs. */
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DEFAULT_MAX_LAG_SECONDS } from '../monitoring/health.js';
import type { PipelineOptions, RunSummary } from '../pipeline/run.js';
import type { Shard } from '../accounts/select.js';
import { humanDuration } from '../time/human-duration.js';
import { parseDuration } from '../time/windows.js';
import { asUsage, UsageError } from './usage-error.js';

export function parseMaxLag(text: string | undefined): number {
  if (text === undefined) return DEFAULT_MAX_LAG_SECONDS;
  return asUsage(() => parseDuration(text, '--max-lag'));
}

/** Warns when the lag limit is not above settle: a checkpoint never comes closer to now than settle. */
export function warnIfMaxLagBelowSettle(maxLagSeconds: number, settle: string, stderr: NodeJS.WritableStream = process.stderr): void {
  let settleSeconds: number;
  try {
    settleSeconds = parseDuration(settle);
  } catch {
    return; // a bad settle is reported where it is used
  }
  if (maxLagSeconds > settleSeconds) return;
  stderr.write(
    `warning: --max-lag ${humanDuration(maxLagSeconds)} is not longer than settle ${humanDuration(settleSeconds)}: the checkpoint always ` +
      `stays at least settle behind now, so the lag is always over this limit; give a --max-lag longer than ${humanDuration(settleSeconds)} (default 26h)\n`,
  );
}

export function parseHttpPort(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n > 65_535) {
    throw new UsageError(`--http-port must be a port number from 0 to 65535 (0 picks a free one), got ${JSON.stringify(text)}`);
  }
  return n;
}

/** With --metrics-file (checked now), `run` wrapped so that the metrics file is written after it, whatever the outcome. */
export async function withMetricsFile(
  path: string | undefined,
  command: string,
  run: (o: PipelineOptions) => Promise<RunSummary>,
): Promise<(o: PipelineOptions) => Promise<RunSummary>> {
  if (path === undefined) return run;
  checkMetricsFile(path);
  const { writeMetricsAfter } = await import('../monitoring/metrics-file.js');
  return (o) => writeMetricsAfter(path, command, o.dataDir, () => run(o), o.volumeRule);
}

export const SHARD_PLACEHOLDER = '{shard}';

/**
 * The --metrics-file of shard I of N: `{shard}` replaced by `I-of-N`. Required with --shard (shards would
 * overwrite each other's, one's failure erased by another's success), refused without.
 */
export function metricsFileOfShard(path: string, shard: Shard | undefined): string {
  if (!shard) {
    checkMetricsFile(path);
    return path;
  }
  if (!path.includes(SHARD_PLACEHOLDER)) {
    throw new UsageError(
      `--metrics-file ${path}: with --shard, each shard needs a file of its own (one file would hold only the last shard's run): ` +
        `put ${SHARD_PLACEHOLDER} in the path, e.g. ${join(dirname(path), `session_etl_${SHARD_PLACEHOLDER}.prom`)} (shard ${shard.index}/${shard.count} writes session_etl_${shard.index}-of-${shard.count}.prom)`,
    );
  }
  const resolved = path.replaceAll(SHARD_PLACEHOLDER, `${shard.index}-of-${shard.count}`);
  checkMetricsFile(resolved);
  return resolved;
}

/** Refuses (exit 2) a --metrics-file path that cannot be written. */
export function checkMetricsFile(path: string): void {
  const dir = dirname(path);
  if (path.trim() === '') throw new UsageError('--metrics-file needs a file path');
  if (path.includes(SHARD_PLACEHOLDER)) {
    throw new UsageError(`--metrics-file ${path}: ${SHARD_PLACEHOLDER} is replaced by the shard, and only with --shard I/N; give a plain file name`);
  }
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new UsageError(`--metrics-file ${path}: directory ${dir} does not exist; create it or choose another path`);
  }
  if (existsSync(path) && statSync(path).isDirectory()) {
    throw new UsageError(`--metrics-file ${path} is a directory; give a file name such as ${join(path, 'session_etl.prom')}`);
  }
}
