/**
 * The orchestrator: one run = resolve the range → take the data directory (finishing what a crash
 * left) → cut windows → extract under rate control → load each window (validate, flatten, commit
 * atomically) → last flush → record the run. Each step is a named function below execute().
 */
import { hostname } from 'node:os';
import { ExitCode } from '../errors.js';
import { ReportingClient } from '../reporting/client.js';
import { needsSettingFixed } from '../reporting/errors/reporting-error.js';
import { backfillCommand } from '../store/backfill-command.js';
import { holdsStore } from '../store/layout.js';
import type { Lock } from '../store/lock.js';
import type { SessionStore } from '../store/session-store.js';
import { StatePublisher } from '../store/state-snapshot.js';
import { checkpointOf, subtractIntervals } from '../time/intervals.js';
import { checkPlanSize, chunkBelowMinChunk, cutWindows, describeWindow, isoOf, type Window } from '../time/windows.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { redact } from '../util/redact.js';
import { realSleep, type Sleep } from '../util/sleep.js';
import { RunFailedError, RunInterruptedError } from './errors.js';
import { extractWindows, type ExtractOutcome } from './extract.js';
import { closeRun, openRun } from './open-run.js';
import { DEFAULTS, newRunId, type BackfillOptions, type ExportOptions, type PipelineOptions, type RunSummary } from './options.js';
import { RateController } from './rate-controller.js';
import { readRateLimitHeaders } from './rate-limit-headers.js';
import { RunTally } from './run-tally.js';
import { WindowLoader } from './window-loader.js';

export { DEFAULTS, newRunId, type BackfillOptions, type ExportOptions, type PipelineOptions, type Progress, type RunSummary } from './options.js';

/** Loads `[from, to)` (to clamped to now - settle). Re-running an interrupted backfill of the same range resumes it. */
export async function runBackfill(opts: BackfillOptions): Promise<RunSummary> {
  validateCommon(opts);
  if (!Number.isInteger(opts.from) || !Number.isInteger(opts.to)) throw new RangeError('from and to must be whole epoch seconds');
  if (opts.from >= opts.to) throw new RangeError(`--from (${isoOf(opts.from)}) must be before --to (${isoOf(opts.to)})`);
  // Refused before anything is written (the plan inside the run is never larger than this range).
  checkPlanSize([{ start: opts.from, end: opts.to }], opts.chunkSeconds ?? DEFAULTS.chunkSeconds);
  return execute(opts, 'backfill', async (store, nowS) => {
    const settle = opts.settleSeconds ?? DEFAULTS.settleSeconds;
    const to = Math.min(opts.to, Math.floor(nowS - settle));
    if (opts.from >= to) {
      log(opts).warn({ settleEnd: isoOf(to) }, `nothing to fetch: the whole range starts at or after now - settle (${isoOf(to)}); sessions that recent are not fetched yet`);
    } else if (to < opts.to) log(opts).warn({ to: isoOf(to) }, `--to is later than now - settle; the backfill stops at ${isoOf(to)}`);
    if (opts.from >= to) return { range: null, todo: [], resumed: false };
    const range = { start: opts.from, end: to };
    const open = await store.openBackfill(range);
    let todo: Window[] = [range];
    if (open) {
      const done = await store.coverageSince(open.startedAtMs);
      todo = subtractIntervals(range, done);
    }
    return { range, todo, resumed: Boolean(open), backfill: range };
  });
}

/** Incremental: from checkpoint - lookback (or `since` on the first run) to now - settle. */
export async function runExport(opts: ExportOptions): Promise<RunSummary> {
  validateCommon(opts);
  const stored = holdsStore(opts.dataDir);
  if (opts.since === undefined && !stored) {
    throw new FirstRunNeedsSinceError(FIRST_RUN_MESSAGE);
  }
  if (opts.since !== undefined && !stored) {
    // The first export plans [since, now - settle): refused before anything is written when too large.
    const to = Math.floor((opts.now ?? Date.now)() / 1000 - (opts.settleSeconds ?? DEFAULTS.settleSeconds));
    if (opts.since < to) checkPlanSize([{ start: opts.since, end: to }], opts.chunkSeconds ?? DEFAULTS.chunkSeconds);
  }
  return execute(opts, 'export', async (store, nowS) => {
    const settle = opts.settleSeconds ?? DEFAULTS.settleSeconds;
    const lookback = opts.lookbackSeconds ?? DEFAULTS.lookbackSeconds;
    const to = Math.floor(nowS - settle);
    const checkpoint = checkpointOf(await store.coverage());
    let from: number;
    if (checkpoint === undefined) {
      if (opts.since === undefined) {
        throw new FirstRunNeedsSinceError(FIRST_RUN_MESSAGE);
      }
      from = opts.since;
    } else {
      from = checkpoint - lookback;
      if (opts.since !== undefined && opts.since < from && opts.warnIfSinceUnused) {
        log(opts).warn(
          { since: isoOf(opts.since), checkpoint: isoOf(checkpoint) },
          `--since ${isoOf(opts.since)} is not used: this data directory has a checkpoint (${isoOf(checkpoint)}), and an export ` +
            `continues from it (less the lookback, from ${isoOf(from)}); to load or re-read what is before, run ` +
            `\`${backfillCommand({ start: opts.since, end: from }, commandDataDir(opts))}\``,
        );
      }
      if (opts.since !== undefined) from = Math.max(from, Math.min(opts.since, checkpoint));
    }
    if (from >= to) return { range: null, todo: [], resumed: false };
    const range = { start: from, end: to };
    return { range, todo: [range], resumed: false };
  });
}

const FIRST_RUN_MESSAGE =
  'nothing has been exported to this data directory yet: give the first export a start with --since 2026-01-01 ' +
  '(or startDate in the configuration), or load history with `session-etl backfill --from … --to …`';

export class FirstRunNeedsSinceError extends Error {
  override readonly name = 'FirstRunNeedsSinceError';
  readonly exitCode = ExitCode.usage;
}

/** Lowest --max-requests-per-second accepted: below it a run would seem to hang (README "Limits"). */
export const MIN_REQUESTS_PER_SECOND = 0.01;

function validateCommon(opts: PipelineOptions): void {
  const posInt = (v: number | undefined, name: string) => {
    if (v !== undefined && (!Number.isInteger(v) || v <= 0)) throw new RangeError(`${name} must be a positive whole number, got ${v}`);
  };
  posInt(opts.concurrency, 'concurrency');
  posInt(opts.chunkSeconds, 'chunk');
  posInt(opts.minChunkSeconds, 'min-chunk');
  posInt(opts.maxResultsPerQuery, 'max-results-per-query');
  const chunk = opts.chunkSeconds ?? DEFAULTS.chunkSeconds;
  const minChunk = opts.minChunkSeconds ?? DEFAULTS.minChunkSeconds;
  if (chunk < minChunk) throw new RangeError(chunkBelowMinChunk(chunk, minChunk));
  const rps = opts.maxRequestsPerSecond;
  if (rps !== undefined && !(Number.isFinite(rps) && rps >= MIN_REQUESTS_PER_SECOND)) {
    throw new RangeError(
      `max-requests-per-second must be a number of at least ${MIN_REQUESTS_PER_SECOND} (one request every ${1 / MIN_REQUESTS_PER_SECOND} s), got ${rps}`,
    );
  }
  if (opts.settleSeconds !== undefined && (!Number.isInteger(opts.settleSeconds) || opts.settleSeconds < 0)) {
    throw new RangeError(`settle must be zero or more seconds, got ${opts.settleSeconds}`);
  }
}

function log(opts: PipelineOptions): Logger {
  return opts.logger ?? silentLogger;
}

interface Plan {
  range: Window | null;
  todo: Window[];
  resumed: boolean;
  backfill?: Window;
}

/**
 * One run, top to bottom: take the data directory → finish what a crash left → plan the windows →
 * record the start → fetch and load every window → finish (last flush, coverage, summary) → give
 * the data directory back.
 */
async function execute(
  opts: PipelineOptions,
  kind: 'backfill' | 'export',
  plan: (store: SessionStore, nowS: number) => Promise<Plan>,
): Promise<RunSummary> {
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? realSleep;
  const startedMs = now();
  const runId = opts.runId ?? newRunId(kind, startedMs);
  const logger = (opts.logger ?? silentLogger).child?.({ runId }) ?? opts.logger ?? silentLogger;

  const run = await openRun(opts, kind, runId, logger);
  const { store } = run;
  const publisher = new StatePublisher(
    store,
    { runId, pid: process.pid, host: hostname(), startedAt: new Date(startedMs).toISOString(), command: `${kind} (run ${runId})` },
    { now, onError: (err) => logger.warn({ err: String(err) }, 'could not write the state snapshot (state.json); the run goes on') },
  );
  const tally = new RunTally(runId, kind, startedMs);
  let summary: RunSummary | undefined;
  let recorded = false;
  let stopFlushing = (): void => {};
  try {
    await recover(store, tally, run.lock, logger);
    const p = await plan(store, startedMs / 1000);
    const windows = windowsOf(p, opts);
    tally.range = p.range;
    await store.recordRun(tally.row());
    recorded = true;
    publisher.soon({ windowsTotal: windows.length, windowsDone: 0, sessions: 0 });
    if (p.backfill && !p.resumed) await store.beginBackfill(p.backfill, runId);
    logger.info(
      { range: p.range ? describeWindow(p.range) : null, windows: windows.length, resumed: p.resumed },
      windows.length ? `${kind} started` : `${kind}: nothing to fetch`,
    );

    const controller = rateControllerFor(opts, now, sleep, logger);
    const loader = new WindowLoader(store, runId, opts.onInvalid ?? 'fail', tally, logger, () => {
      const progress = { windowsTotal: windows.length, windowsDone: tally.stats.windowsDone, sessions: tally.totals.fetched };
      publisher.soon(progress);
      opts.onProgress?.(progress);
    });
    stopFlushing = flushPeriodically(store, tally, opts, logger);
    const outcome = await extractWindows({
      client: reportingClientFor(opts, controller, tally, logger, now, sleep),
      windows,
      controller,
      maxConcurrency: opts.concurrency ?? DEFAULTS.concurrency,
      ...(opts.maxResultsPerQuery ? { maxResultsPerQuery: opts.maxResultsPerQuery } : {}),
      minChunkSeconds: opts.minChunkSeconds ?? DEFAULTS.minChunkSeconds,
      ...(opts.stopSignal ? { stopSignal: opts.stopSignal } : {}),
      ...(opts.abortSignal ? { abortSignal: opts.abortSignal } : {}),
      now,
      stats: tally.stats,
      onLog: (event, fields) => logger.info(fields, event),
      onWindow: (w, body, fetchedAtMs) => loader.load(w, body, fetchedAtMs),
    });
    tally.stats.rateLimited = controller.rateLimitedCount;
    stopFlushing();

    summary = await finish(store, tally, p, windows.length, outcome, controller, opts, now);
    if (outcome.error) {
      // The error itself is told once, with the summary (the CLI prints it after it; the caller catches it).
      logger.error({ checkpoint: summary.checkpoint }, `${kind} failed`);
      throw Object.assign(new RunFailedError(`${kind} ${runId} failed: ${summary.error}`, runId, { cause: outcome.error }), { summary });
    }
    if (summary.outcome === 'interrupted') {
      // A backfill resumes when run again over the same range (its end as clamped here): say how.
      const resume = p.backfill ? `; to resume it, run \`${backfillCommand(p.backfill, commandDataDir(opts))}\`` : '';
      throw Object.assign(
        new RunInterruptedError(`${kind} ${runId} stopped: ${summary.windows.skipped} windows not started; ${committedNote(summary.checkpoint)}${resume}`, opts.stopExitCode ?? 130),
        { summary },
      );
    }
    logger.info({ sessions: tally.totals.written, windows: tally.stats.windowsDone, durationMs: summary.durationMs }, `${kind} finished`);
    return summary;
  } catch (err) {
    if (recorded && !summary) {
      await store.recordRun(tally.failedRow(now() / 1000, redact(String((err as Error)?.message ?? err)))).catch(() => {});
    }
    throw err;
  } finally {
    stopFlushing();
    // The snapshot readers see once the run has ended (status reads the DuckDB file itself then).
    await publisher.final().catch((err) => logger.warn({ err: String(err) }, 'could not write the state snapshot (state.json)'));
    const removed = await closeRun(run, opts, summary?.outcome === 'succeeded' || summary?.outcome === 'nothing-to-do');
    // A first run that committed nothing leaves nothing: its summary names no files (the error carries the same object).
    if (removed && summary) summary.files = { ...summary.files, duckdb: null, parquet: null, partitionsWritten: [], removed: true };
  }
}

/** What a crash left: committed windows not merged, Parquet partitions not rewritten, runs that died. */
async function recover(store: SessionStore, tally: RunTally, lock: Lock | undefined, logger: Logger): Promise<void> {
  const recovered = await store.flush();
  recovered.partitions.forEach((p) => tally.partitionsWritten.add(p));
  if (recovered.partitions.length) logger.info({ partitions: recovered.partitions.length }, 'finished Parquet rewrites left by an earlier run');
  // No other run can be going while we hold the lock: one still marked running was killed or crashed.
  const died = await store.recordDiedRuns(tally.runId, lock?.tookOverFrom);
  if (died.length) logger.warn({ runs: died }, `recorded ${died.length === 1 ? 'an earlier run' : 'earlier runs'} that died without an outcome as died`);
  await store.beginRunCounts();
}

/** The plan cut into windows (bounded: checkPlanSize), newest first when asked. */
function windowsOf(p: Plan, opts: PipelineOptions): Window[] {
  const chunk = opts.chunkSeconds ?? DEFAULTS.chunkSeconds;
  checkPlanSize(p.todo, chunk);
  const windows = p.todo.flatMap((w) => cutWindows(w.start, w.end, chunk));
  if (opts.newestFirst) windows.reverse();
  return windows;
}

function rateControllerFor(opts: PipelineOptions, now: () => number, sleep: Sleep, logger: Logger): RateController {
  return new RateController({
    maxConcurrency: opts.concurrency ?? DEFAULTS.concurrency,
    now,
    sleep,
    log: (fields) => logger.debug(fields, 'rate control: a burst of 429s judged'),
    ...(opts.maxRequestsPerSecond ? { maxRequestsPerSecond: opts.maxRequestsPerSecond } : {}),
  });
}

/** The reporting client of a run: every answer, retry and 429 reaches the rate controller. */
function reportingClientFor(
  opts: PipelineOptions,
  controller: RateController,
  tally: RunTally,
  logger: Logger,
  now: () => number,
  sleep: Sleep,
): ReportingClient {
  return new ReportingClient({
    url: opts.reportingUrl,
    apiKey: opts.apiKey,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.maxBodyBytes ? { maxBodyBytes: opts.maxBodyBytes } : {}),
    ...opts.retry,
    now,
    sleep,
    logger,
    hooks: {
      beforeAttempt: (signal) => controller.beforeAttempt(signal),
      onRateLimited: (ms, isDate) => {
        tally.stats.rateLimited++;
        controller.onRateLimited(ms, isDate);
        logger.warn({ retryAfterMs: ms, concurrency: controller.concurrency, pace: controller.pace }, 'rate limited (429): pausing all workers');
      },
      onSuccess: () => controller.onSuccess(),
      onResponseHeaders: (headers) => {
        const hint = readRateLimitHeaders(headers, now());
        if (hint) controller.onRateLimitHint(hint);
      },
      onRetry: ({ error, delayMs }) => {
        logger.warn({ kind: error.kind, delayMs, message: error.message }, 'retrying a request');
      },
    },
  });
}

/** Merges and Parquet rewrites at least every parquetFlushSeconds while windows are fetched; returns the stop. */
function flushPeriodically(store: SessionStore, tally: RunTally, opts: PipelineOptions, logger: Logger): () => void {
  const every = (opts.parquetFlushSeconds ?? DEFAULTS.parquetFlushSeconds) * 1000;
  if (every <= 0) return () => {};
  const timer = setInterval(() => {
    store.flush().then(
      (r) => tally.addFlush(r),
      (err) => logger.warn({ err: String(err) }, 'periodic flush (merge, Parquet rewrite) failed; it is retried at the end of the run'),
    );
  }, every);
  timer.unref();
  return () => clearInterval(timer);
}

/** The end of a run whose windows were all tried: last flush, coverage, backfill bookkeeping, its summary recorded. */
async function finish(
  store: SessionStore,
  tally: RunTally,
  p: Plan,
  windowsTotal: number,
  outcome: ExtractOutcome,
  controller: RateController,
  opts: PipelineOptions,
  now: () => number,
): Promise<RunSummary> {
  tally.addLastFlush(await store.flush());
  await store.compactCoverage();
  const interrupted = !outcome.error && outcome.skipped.length > 0 && Boolean(opts.stopSignal?.aborted || opts.abortSignal?.aborted);
  const failed = Boolean(outcome.error);
  if (p.backfill && !failed && !interrupted) await store.completeBackfill(p.backfill);

  const coverage = await store.coverage();
  const cp = checkpointOf(coverage);
  const error = outcome.error
    ? redact(
        `${outcome.error.message}; ${committedNote(cp !== undefined ? isoOf(cp) : null)}; ` +
          (needsSettingFixed(outcome.error) ? 'running it again will not help until that is fixed' : 'run the same command again to continue'),
      )
    : undefined;
  const summary = tally.summary({
    outcome: failed ? 'failed' : interrupted ? 'interrupted' : windowsTotal ? 'succeeded' : 'nothing-to-do',
    resumed: p.resumed,
    windowsTotal,
    skipped: outcome.skipped.length,
    coverage,
    pausedMs: controller.pausedMs,
    pace: controller.learnedRate,
    nowMs: now(),
    files: {
      dataDir: opts.dataDir,
      duckdb: store.format === 'parquet' ? null : store.layout.dbPath,
      parquet: store.format === 'duckdb' ? null : store.layout.parquetDir,
    },
    error,
  });
  await store.recordRun({
    ...tally.row(),
    ended_at: now() / 1000,
    outcome: summary.outcome,
    error: error ?? null,
    paused_ms: summary.pausedMs,
    pace: summary.pace,
  });
  return summary;
}

/** The --data-dir of a command to paste: the run's, unless it is an account's (accounts/NAME: never a --data-dir of its own). */
function commandDataDir(opts: PipelineOptions): string | undefined {
  return opts.parquetDir === undefined ? opts.dataDir : undefined;
}

function committedNote(checkpoint: string | null): string {
  return checkpoint !== null ? `data up to ${checkpoint} is committed` : 'no window was committed';
}
