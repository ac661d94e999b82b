/**
 * A run's options resolved once, at the top (runBatch): what the caller gave checked, every default
 * applied, and the memory budget applied to the jobs, so that one fully defaulted, typed object goes
 * down and nothing below defaults again.
 */
import { describeSplit, formatSize, glibcSettingsMissing, resolveMemory, type MemorySplit } from '../config/memory-budget.js';
import { retryOptions } from '../reporting/defaults.js';
import { parseParquetUrl, type DatasetLocation } from '../store/dataset/location.js';
import { checkWriterSettings } from '../store/session-store.js';
import { DEFAULT_VOLUME_RULE } from '../store/volume-anomalies.js';
import { checkPlanSize, chunkBelowMinChunk, isoOf } from '../time/windows.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { realSleep } from '../util/sleep.js';
import { AnswerBytes } from './answer-bytes.js';
import { DEFAULTS, type AccountJob, type BatchOptions, type PipelineOptions, type ResolvedBatch, type ResolvedJob } from './options.js';

/** Lowest --max-requests-per-second accepted: below it a run would seem to hang (docs/configuration.md). */
export const MIN_REQUESTS_PER_SECOND = 0.01;

/** The batch's options with their defaults, and the memory split worked out for it. */
export function resolveBatch(given: BatchOptions, memory: MemorySplit): ResolvedBatch {
  const logger = given.logger ?? silentLogger;
  let told = false;
  const answers = new AnswerBytes(memory.answerBytes, memory.maxBodyBytes, (f) => {
    // Once a run, when the answers waiting alone fill the share (at long text the next request
    // waits for a commit nearly every time).
    if (told || f.readingRequests > 0) return;
    told = true;
    logger.debug(
      { answers: f },
      `answers waiting for their commit hold ${formatSize(f.heldBytes)}, the memory budget's share is ${formatSize(f.limitBytes)}: the next request waits for a commit`,
    );
  });
  return {
    ...given,
    now: given.now ?? Date.now,
    sleep: given.sleep ?? realSleep,
    logger,
    parquetFlushSeconds: given.parquetFlushSeconds ?? DEFAULTS.parquetFlushSeconds,
    concurrency: given.concurrency ?? 1,
    volumeRule: given.volumeRule ?? DEFAULT_VOLUME_RULE,
    // Read when a stop is reported: the caller's may be a getter a signal handler sets.
    stopExitCode: () => given.stopExitCode ?? DEFAULTS.stopExitCode,
    memory,
    answers,
  };
}

/** An account's options with what it does not set taken from its batch (clock, logger, signals, exit code) or defaulted. */
function resolveJob(job: AccountJob, batch: BatchOptions): ResolvedJob {
  const o: PipelineOptions = job.opts;
  const opts = {
    ...o,
    chunkSeconds: o.chunkSeconds ?? DEFAULTS.chunkSeconds,
    concurrency: o.concurrency ?? DEFAULTS.concurrency,
    minChunkSeconds: o.minChunkSeconds ?? DEFAULTS.minChunkSeconds,
    settleSeconds: o.settleSeconds ?? DEFAULTS.settleSeconds,
    onInvalid: o.onInvalid ?? DEFAULTS.onInvalid,
    // 0 (not a usable timeout or limit) stands for the default, as it always has.
    timeoutMs: o.timeoutMs || DEFAULTS.timeoutMs,
    maxBodyBytes: o.maxBodyBytes || DEFAULTS.maxBodyBytes,
    retry: retryOptions(o.retry),
    now: o.now ?? batch.now ?? Date.now,
    sleep: o.sleep ?? batch.sleep ?? realSleep,
    logger: o.logger ?? batch.logger ?? silentLogger,
    stopSignal: o.stopSignal ?? batch.stopSignal,
    abortSignal: o.abortSignal ?? batch.abortSignal,
    stopExitCode: () => job.opts.stopExitCode ?? batch.stopExitCode ?? DEFAULTS.stopExitCode,
  };
  const lookback = job.kind === 'export' ? { lookbackSeconds: job.opts.lookbackSeconds ?? DEFAULTS.lookbackSeconds } : {};
  return { ...job, opts: { ...opts, ...lookback } } as ResolvedJob;
}

/** A single-account run's batch: the store options are the run's own. */
export function batchOf(opts: PipelineOptions): BatchOptions {
  return { ...opts, accounts: 'single', concurrency: 1, ...datasetOf(opts) };
}

/** The dataset location of a run's options (`parquetUrl`), parsed; nothing for the data directory's own. */
export function datasetOf(opts: Pick<PipelineOptions, 'parquetUrl' | 's3PathStyle'>): { dataset?: DatasetLocation } {
  return opts.parquetUrl ? { dataset: parseParquetUrl(opts.parquetUrl, opts.s3PathStyle ?? false) } : {};
}

/** The job resolved (resolveJob), or RangeError for options that cannot make a run, before anything is opened. */
export function checkedJob(given: AccountJob, batch: BatchOptions): ResolvedJob {
  const job = resolveJob(given, batch);
  if (!job.refused) checkJob(job);
  return job;
}

function checkJob(job: ResolvedJob): void {
  const opts = job.opts;
  const posInt = (v: number | undefined, name: string) => {
    if (v !== undefined && (!Number.isInteger(v) || v <= 0)) throw new RangeError(`${name} must be a positive whole number, got ${v}`);
  };
  posInt(opts.concurrency, 'concurrency');
  posInt(opts.chunkSeconds, 'chunk');
  posInt(opts.minChunkSeconds, 'min-chunk');
  posInt(opts.maxResultsPerQuery, 'max-results-per-query');
  const { chunkSeconds: chunk, minChunkSeconds: minChunk } = opts;
  if (chunk < minChunk) throw new RangeError(chunkBelowMinChunk(chunk, minChunk));
  const rps = opts.maxRequestsPerSecond;
  if (rps !== undefined && !(Number.isFinite(rps) && rps >= MIN_REQUESTS_PER_SECOND)) {
    throw new RangeError(
      `max-requests-per-second must be a number of at least ${MIN_REQUESTS_PER_SECOND} (one request every ${1 / MIN_REQUESTS_PER_SECOND} s), got ${rps}`,
    );
  }
  if (!Number.isInteger(opts.settleSeconds) || opts.settleSeconds < 0) {
    throw new RangeError(`settle must be zero or more seconds, got ${opts.settleSeconds}`);
  }
  if (job.kind === 'verify') {
    const v = job.opts;
    if (v.sample !== undefined && (!Number.isInteger(v.sample) || v.sample <= 0)) throw new RangeError(`sample must be a positive whole number of days, got ${v.sample}`);
    if (v.deleteMissing && !v.repair) throw new RangeError('delete-missing goes with repair: it removes sessions the source no longer returns while repairing the rest');
    if (v.maxDelete !== undefined && (!Number.isInteger(v.maxDelete) || v.maxDelete < 0)) throw new RangeError(`maxDelete must be a whole number of sessions, 0 or more; got ${v.maxDelete}`);
    if (v.maxDelete !== undefined && !v.deleteMissing) throw new RangeError('maxDelete goes with deleteMissing: it allows that many removals');
  }
  if (job.kind === 'backfill' || job.kind === 'verify') {
    const { from, to } = job.opts;
    if (!Number.isInteger(from) || !Number.isInteger(to)) throw new RangeError('from and to must be whole epoch seconds');
    if (from >= to) throw new RangeError(`--from (${isoOf(from)}) must be before --to (${isoOf(to)})`);
    // Refused before anything is written (the plan inside the run is never larger than this range).
    const before = job.kind === 'verify' ? job.opts.beforeCheckpoint : undefined;
    checkPlanSize([{ start: before !== undefined ? Math.max(from, to - before) : from, end: to }], chunk);
  }
}

/**
 * The batch's memory budget and split, before anything is opened (below the minimum: MemoryBudgetError,
 * exit 2), logged (debug); the jobs returned have maxBodyBytes at most the budget's per-body share.
 */
export function planMemory(batch: Pick<BatchOptions, 'memoryLimit' | 'concurrency'>, jobs: readonly ResolvedJob[], logger: Logger): { split: MemorySplit; jobs: ResolvedJob[] } {
  // SESSION_ETL_DUCKDB_MEMORY_LIMIT as DuckDB takes it, refused with the store's own message first.
  checkWriterSettings();
  const running = jobs.filter((j) => !j.refused);
  const side = Math.max(1, Math.min(batch.concurrency ?? 1, running.length));
  // Requests in flight: the accounts that run side by side, each with its own concurrency (the largest, to be safe).
  const perAccount = Math.max(1, ...running.map((j) => j.opts.concurrency));
  const maxBodyBytes = Math.max(...running.map((j) => j.opts.maxBodyBytes), 1);
  const { budget, split } = resolveMemory({
    setting: batch.memoryLimit,
    concurrency: side * perAccount,
    maxBodyBytes,
    duckdbOverride: process.env.SESSION_ETL_DUCKDB_MEMORY_LIMIT || undefined,
  });
  logger.debug({ memory: { ...split, from: budget.from } }, `memory budget: ${describeSplit(budget, split)}`);
  const unset = process.platform === 'linux' ? glibcSettingsMissing() : [];
  if (unset.length) logger.debug({ unset }, `glibc's allocator keeps freed memory: ${unset.join(' ')} not set (docs/configuration.md "glibc's allocator")`);
  const capped = jobs.map((j) => (j.opts.maxBodyBytes > split.maxBodyBytes ? ({ ...j, opts: { ...j.opts, maxBodyBytes: split.maxBodyBytes } } as ResolvedJob) : j));
  return { split, jobs: capped };
}
