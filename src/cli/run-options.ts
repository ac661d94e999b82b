/** Flags shared by `backfill`, `export` and `schedule`, and their translation into PipelineOptions. */
import { Command, Option } from 'commander';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { NotifySettings } from '../monitoring/notify.js';
import type { PipelineOptions } from '../pipeline/run.js';
import type { ExecuteRunOptions } from './execute-run.js';
import { chunkBelowMinChunk, parseDuration } from '../time/windows.js';
import { warnIfMaxLagBelowSettle } from './monitoring-options.js';
import { asUsage, UsageError } from './usage-error.js';
import { addVolumeOptions, num, volumeConfigFlags, volumeRuleOf, type VolumeFlags } from './volume-options.js';

export interface CommonFlags extends VolumeFlags {
  config?: string;
  dataDir?: string;
  format?: string;
  parquetUrl?: string;
  chunk?: string;
  concurrency?: string;
  maxResultsPerQuery?: string;
  minChunk?: string;
  settle?: string;
  onInvalid?: string;
  maxRequestsPerSecond?: string;
  requestTimeout?: string;
  maxAttempts?: string;
  logLevel?: string;
  json?: boolean;
  progress?: boolean;
  wait?: boolean;
  notifyUrl?: string;
  maxLag?: string;
  waitTimeout?: string;
  memoryLimit?: string;
}

export function addCommonOptions(cmd: Command): Command {
  cmd
    .option('--config <file>', 'configuration file (JSON); also SESSION_ETL_CONFIG')
    .option('--data-dir <dir>', 'output directory; also SESSION_ETL_DATA_DIR (default ./data)')
    .addOption(new Option('--format <format>', 'what to write (default: the data directory\'s format; a new one: both)').choices(['duckdb', 'parquet', 'both']))
    .option('--parquet-url <s3-url>', 'put the Parquet dataset in a bucket: s3://BUCKET/PREFIX (docs/object-storage.md); also SESSION_ETL_PARQUET_URL')
    .option('--chunk <duration>', 'window length: 15m, 6h, 1d, 7d, ... (default 1d)')
    .option('--concurrency <n>', 'maximum requests in flight (default 4)')
    .option('--max-results-per-query <n>', 'split a window that returns at least this many records')
    .option('--min-chunk <duration>', 'smallest window bisection may produce (default 1m)')
    .option('--settle <duration>', 'never fetch closer to now than this (default 10m)')
    .addOption(new Option('--on-invalid <policy>', 'invalid records: fail the window, or quarantine them').choices(['fail', 'quarantine']))
    .option('--max-requests-per-second <n>', 'upper bound on the request rate')
    .option('--request-timeout <duration>', 'per-request timeout (default 60s)')
    .option('--max-attempts <n>', 'attempts per request for transient errors (default 5)')
    .option('--memory-limit <size>', "memory budget, such as 384MiB: the smaller of it and the container's limit (default 300MB; below 272MiB, or in a container below 384MiB, the run refuses, exit 2); also SESSION_ETL_MEMORY_LIMIT")
    .addOption(new Option('--log-level <level>', 'log level').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']))
    .option('--notify-url <url>', 'POST a JSON notification here when a run fails, recovers or falls behind; also SESSION_ETL_NOTIFY_URL')
    .option('--max-lag <duration>', 'notify when the checkpoint falls further behind now than this (default 26h)')
    .option('--wait', 'when another run holds the data directory, or a reader holds the DuckDB file open, wait instead of failing (exit 3)')
    .option('--wait-timeout <duration>', 'with --wait: give up (exit 3) after this long (default 6h)')
    .option('--json', 'print the summary as one JSON object on stdout')
    .option('--no-progress', 'no progress bar, even on a terminal');
  return addVolumeOptions(cmd);
}

/** Loads the configuration with these flags on top. Throws UsageError (exit 2) on any bad value. */
export function configFromFlags(flags: CommonFlags, extra: Partial<Record<keyof Config, unknown>> = {}): LoadedConfig {
  return loadConfig({
    ...(flags.config ? { configFile: flags.config } : {}),
    flags: {
      dataDir: flags.dataDir,
      format: flags.format,
      parquetUrl: flags.parquetUrl,
      chunk: flags.chunk,
      concurrency: num(flags.concurrency, '--concurrency', true),
      maxResultsPerQuery: num(flags.maxResultsPerQuery, '--max-results-per-query', true),
      minChunk: flags.minChunk,
      settle: flags.settle,
      onInvalid: flags.onInvalid,
      maxRequestsPerSecond: num(flags.maxRequestsPerSecond, '--max-requests-per-second'),
      requestTimeout: flags.requestTimeout,
      maxAttempts: num(flags.maxAttempts, '--max-attempts', true),
      logLevel: flags.logLevel,
      notifyUrl: flags.notifyUrl,
      maxLag: flags.maxLag,
      ...volumeConfigFlags(flags),
      memoryLimit: flags.memoryLimit,
      ...extra,
    },
  });
}

/** Where the reporting URL was set, for the advice of a refused first connection. */
function urlSourceText(loaded: LoadedConfig): string {
  const texts: Record<string, string> = {
    env: 'REPORTING_URL in the environment',
    'env-file': 'REPORTING_URL in the .env file',
    file: `reportingUrl in ${loaded.file ?? 'the configuration file'}`,
    flag: 'the reporting URL given on the command line',
  };
  return texts[loaded.sources.reportingUrl ?? ''] ?? 'REPORTING_URL (or reportingUrl in the configuration file)';
}

/** How long --wait waits, for the lock and then for readers of the DuckDB file, unless --wait-timeout says otherwise. */
const DEFAULT_WAIT_TIMEOUT = '6h';

/** PipelineOptions from an effective configuration. The endpoint and key must be set. */
export function pipelineOptions(loaded: LoadedConfig, flags: { wait?: boolean; waitTimeout?: string } = {}): PipelineOptions {
  const c = loaded.config;
  if (!c.reportingUrl) {
    throw new UsageError('no reporting endpoint: set REPORTING_URL (or reportingUrl in the configuration file)');
  }
  if (!c.apiKey) {
    throw new UsageError('no reporting API key: set REPORTING_API_KEY in the environment (or apiKeyFile in the configuration)');
  }
  const waitTimeoutMs = asUsage(() => parseDuration(flags.waitTimeout ?? DEFAULT_WAIT_TIMEOUT, '--wait-timeout')) * 1000;
  const chunkSeconds = parseDuration(c.chunk);
  const minChunkSeconds = parseDuration(c.minChunk);
  if (chunkSeconds < minChunkSeconds) throw new UsageError(chunkBelowMinChunk(chunkSeconds, minChunkSeconds));
  return {
    reportingUrl: c.reportingUrl,
    reportingUrlSource: urlSourceText(loaded),
    apiKey: c.apiKey,
    dataDir: c.dataDir,
    // Set by the user: checked against the data directory's format; else the directory's own is used.
    ...(loaded.sources.format && loaded.sources.format !== 'default' ? { format: c.format } : {}),
    ...(c.parquetUrl ? { parquetUrl: c.parquetUrl, s3PathStyle: c.s3PathStyle } : {}),
    chunkSeconds,
    concurrency: c.concurrency,
    ...(c.maxResultsPerQuery ? { maxResultsPerQuery: c.maxResultsPerQuery } : {}),
    minChunkSeconds,
    settleSeconds: parseDuration(c.settle),
    onInvalid: c.onInvalid,
    ...(c.maxRequestsPerSecond ? { maxRequestsPerSecond: c.maxRequestsPerSecond } : {}),
    timeoutMs: parseDuration(c.requestTimeout) * 1000,
    maxBodyBytes: c.maxBodyBytes,
    ...(c.memoryLimit !== null && c.memoryLimit !== undefined ? { memoryLimit: { value: c.memoryLimit, name: memorySettingName(loaded) } } : {}),
    retry: { maxAttempts: c.maxAttempts },
    volumeRule: volumeRuleOf(c),
    lock: {
      wait: Boolean(flags.wait),
      waitTimeoutMs,
      onWait: (h) =>
        process.stderr.write(`waiting for the data directory's lock${h ? ` (held by pid ${h.pid} on ${h.host}, ${h.command})` : ''}…\n`),
      onStoreBusy: (err) =>
        process.stderr.write(
          `waiting for ${err.holder}${err.byReader ? ', a reader,' : ''} to close the DuckDB file (up to ${flags.waitTimeout ?? DEFAULT_WAIT_TIMEOUT}, --wait-timeout)…\n`,
        ),
    },
  };
}

/** Which setting gave memoryLimit, as the budget's messages name it. */
export function memorySettingName(loaded: LoadedConfig): string {
  const src = loaded.sources.memoryLimit;
  return src === 'flag' ? '--memory-limit' : src === 'env' || src === 'env-file' ? 'SESSION_ETL_MEMORY_LIMIT' : `memoryLimit in ${loaded.file ?? 'the configuration file'}`;
}

/** Where and when run notifications go (docs/monitoring.md "Notifications"); undefined when notifyUrl is not set. */
export function notifySettings(loaded: LoadedConfig): NotifySettings | undefined {
  const c = loaded.config;
  if (!c.notifyUrl) return undefined;
  const maxLagSeconds = parseDuration(c.maxLag, 'maxLag');
  warnIfMaxLagBelowSettle(maxLagSeconds, c.settle);
  return { url: c.notifyUrl, maxLagSeconds };
}

/** executeRun's options for a run command (`backfill`, `export`, `verify`): summary form, progress bar, log level, notifications. */
export function runCommandOptions(loaded: LoadedConfig, flags: { json?: boolean; progress?: boolean }, command: string): ExecuteRunOptions {
  const n = notifySettings(loaded);
  return { json: Boolean(flags.json), progress: flags.progress !== false, logLevel: loaded.config.logLevel, ...(n ? { notify: { ...n, command } } : {}) };
}
