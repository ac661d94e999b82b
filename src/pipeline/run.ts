/**
 * The orchestrator. A run works on one store (a data directory's, or a shard's: docs/accounts.md)
 * for one or more accounts: take the store (finishing what a crash left) → for each account, side by
 * side: plan its windows → extract them under its own rate control → load each window (validate,
 * flatten, commit atomically with its coverage) → then one last flush for all of them → record each
 * account's run. A single-account run is the case of one account, ''. Each step is a named function below.
 */
import { hostname } from 'node:os';
import { ExitCode } from '../errors.js';
import { ReportingClient } from '../reporting/client.js';
import { EndpointUnreachableError } from '../reporting/errors/endpoint-unreachable-error.js';
import { needsSettingFixed } from '../reporting/errors/reporting-error.js';
import { holdsStore } from '../store/layout.js';
import { parseParquetUrl, type DatasetLocation } from '../store/dataset/location.js';
import { DataDirError } from '../store/errors.js';
import type { Lock } from '../store/lock.js';
import { SINGLE_ACCOUNT, type FlushResult, type SessionStore } from '../store/session-store.js';
import { StatePublisher } from '../store/state-snapshot.js';
import { DEFAULT_VOLUME_RULE, type VolumeAnomaly } from '../store/volume-anomalies.js';
import { checkpointOf, subtractIntervals } from '../time/intervals.js';
import { checkPlanSize, chunkBelowMinChunk, cutWindows, describeWindow, isoOf, type Window } from '../time/windows.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { clipText } from '../util/clip-text.js';
import { redact } from '../util/redact.js';
import { oneLine } from '../util/terminal-text.js';
import { realSleep, type Sleep } from '../util/sleep.js';
import { RunFailedError, RunInterruptedError } from './errors.js';
import { extractWindows, type ExtractOutcome } from './extract.js';
import { planMemory } from './memory-plan.js';
import { closeRun, openRun } from './open-run.js';
import {
  DEFAULTS,
  newRunId,
  type AccountJob,
  type AccountResult,
  type BackfillOptions,
  type BatchOptions,
  type ExportOptions,
  type PipelineOptions,
  type Progress,
  type RunSummary,
  type VerifyOptions,
} from './options.js';
import { RateController } from './rate-controller.js';
import { readRateLimitHeaders } from './rate-limit-headers.js';
import { RunTally } from './run-tally.js';
import { WindowLoader } from './window-loader.js';
import type { SessionsBody } from '../reporting/sessions-body.js';
import { AccountVerifier, differencesText, verifyPlan, VerifyDifferencesError, type VerifySummary } from './verify.js';
import { rangeArgs, suggestedCommand, type CommandTarget } from '../util/suggested-command.js';

export { VerifyDifferencesError, type VerifyReport, type VerifySummary } from './verify.js';
export {
  DEFAULTS,
  newRunId,
  type AccountJob,
  type AccountResult,
  type BackfillOptions,
  type BatchOptions,
  type ExportOptions,
  type PipelineOptions,
  type Progress,
  type RunSummary,
  type VerifyOptions,
} from './options.js';

/** Loads `[from, to)` (to clamped to now - settle). Re-running an interrupted backfill of the same range resumes it. */
export async function runBackfill(opts: BackfillOptions): Promise<RunSummary> {
  checkJob({ account: SINGLE_ACCOUNT, kind: 'backfill', opts });
  return only(await runBatch(batchOf(opts), [{ account: SINGLE_ACCOUNT, kind: 'backfill', opts }]));
}

/**
 * Fetches `[from, to)` (or `sample` random days of it) as a backfill would and compares it with the
 * store (verify.ts); with `repair`, makes the store equal the source. Throws VerifyDifferencesError
 * (a RunFailedError carrying the summary) when the store differs from the source at the end.
 */
export async function runVerify(opts: VerifyOptions): Promise<VerifySummary> {
  checkJob({ account: SINGLE_ACCOUNT, kind: 'verify', opts });
  if (!holdsStore(opts.dataDir)) {
    throw new DataDirError(`no session-etl data in ${opts.dataDir}: verify compares the source with what a backfill or export stored; run one first`);
  }
  return only(await runBatch(batchOf(opts), [{ account: SINGLE_ACCOUNT, kind: 'verify', opts }])) as VerifySummary;
}

/** Incremental: from checkpoint - lookback (or `since` on the first run) to now - settle. */
export async function runExport(opts: ExportOptions): Promise<RunSummary> {
  checkJob({ account: SINGLE_ACCOUNT, kind: 'export', opts });
  // With the dataset in a bucket, the state may be there rather than here (format parquet): the plan decides.
  const stored = opts.parquetUrl !== undefined || holdsStore(opts.dataDir);
  if (opts.since === undefined && !stored) throw new FirstRunNeedsSinceError(FIRST_RUN_MESSAGE);
  if (opts.since !== undefined && !stored) {
    // The first export plans [since, now - settle): refused before anything is written when too large.
    const to = Math.floor((opts.now ?? Date.now)() / 1000 - (opts.settleSeconds ?? DEFAULTS.settleSeconds));
    if (opts.since < to) checkPlanSize([{ start: opts.since, end: to }], opts.chunkSeconds ?? DEFAULTS.chunkSeconds);
  }
  return only(await runBatch(batchOf(opts), [{ account: SINGLE_ACCOUNT, kind: 'export', opts }]));
}

/**
 * Runs the jobs of several accounts on one store (a many-account store: `batch.accounts` 'many'),
 * at most `batch.concurrency` accounts at a time, each with its own rate control, HTTP client and
 * options; their commits, merges, Parquet rewrites and checkpoint are shared. One account's failure
 * is its own result; a failure of the store itself (its lock, a full disk) is thrown.
 */
export async function runBatch(given: BatchOptions, jobsGiven: readonly AccountJob[]): Promise<AccountResult[]> {
  for (const job of jobsGiven) checkJob(job);
  // The memory budget, before anything is opened: below the minimum the run is refused (exit 2).
  const memory = planMemory(given, jobsGiven, given.logger ?? silentLogger);
  const batch: BatchOptions = { ...given, memory: memory.split };
  const jobs = memory.jobs;
  const now = batch.now ?? Date.now;
  const startedMs = now();
  const kind = jobs[0]?.kind ?? 'export';
  const batchRunId = jobs.length === 1 && jobs[0]!.opts.runId ? jobs[0]!.opts.runId : newRunId(jobs.length === 1 ? kind : `${kind}-accounts`, startedMs);
  const logger = batch.logger ?? silentLogger;
  const run = await openRun(batch, `${kind} (run ${batchRunId})`, batchRunId, logger);
  const { store } = run;
  const publisher = new StatePublisher(
    store,
    { runId: batchRunId, pid: process.pid, host: hostname(), startedAt: new Date(startedMs).toISOString(), command: `${kind} (run ${batchRunId})` },
    {
      now,
      onError: (err) => logger.warn({ err: String(err) }, 'could not write the state snapshot (state.json); the run goes on'),
      ...(batch.volumeRule ? { volume: batch.volumeRule } : {}),
    },
  );
  const single = jobs.length === 1 ? batchRunId : undefined;
  const parts: Part[] = jobs.map((job) => newPart(job, single, now, logger));
  const progress = (): Progress => ({
    windowsTotal: parts.reduce((n, p) => n + p.windowsTotal, 0),
    windowsDone: parts.reduce((n, p) => n + p.tally.stats.windowsDone, 0),
    sessions: parts.reduce((n, p) => n + p.tally.totals.fetched, 0),
  });
  let results: AccountResult[] | undefined;
  let stopFlushing = (): void => {};
  try {
    const recovered = await recover(store, batchRunId, run.lock, logger);
    for (const p of parts) p.tally.addRecovered(recovered);
    await batch.prepare?.(store);
    // Sessions stored before this point (moved in by prepare too) count as updated when replaced.
    await store.beginRunCounts();
    store.setRunningAccounts(jobs.map((j) => j.account));
    stopFlushing = flushPeriodically(
      store,
      (r) => {
        parts.forEach((p) => p.tally.addFlush(r));
        // A complete flush: the bucket's copy of the state can move on (format parquet; at most once a minute).
        if (run.bucket) void store.withWriteConnection((c) => run.bucket!.saveState(c, { format: store.format })).catch((err) => logger.warn({ err: redact(String(err)) }, 'could not update the state kept in the bucket; the end of the run tries again'));
      },
      batch.parquetFlushSeconds ?? DEFAULTS.parquetFlushSeconds,
      logger,
    );
    const committed = () => {
      const pr = progress();
      publisher.soon(pr);
      batch.onProgress?.(pr);
    };
    await eachAccount(parts, batch.concurrency ?? 1, batch.stopSignal, (part) => {
      if (!single) startPart(part, undefined, now, logger);
      return fetchAccount(store, part, batch, committed);
    });
    stopFlushing();
    results = await finish(store, parts, batch, now);
    return results;
  } catch (err) {
    // The store failed (its final flush, say): every account's run that was recorded as running is recorded as failed.
    for (const p of parts) {
      if (p.recorded && !p.summary) await store.recordRun(p.tally.failedRow(now() / 1000, clipText(oneLine(redact(String((err as Error)?.message ?? err)))))).catch(() => {});
    }
    throw err;
  } finally {
    stopFlushing();
    for (const p of parts) await p.verifier?.close().catch(() => {});
    // The snapshot readers see once the run has ended (status reads the DuckDB file itself then).
    await publisher.final().catch((err) => logger.warn({ err: String(err) }, 'could not write the state snapshot (state.json)'));
    const kept = results?.some((r) => r.ok && (r.summary!.outcome === 'succeeded' || r.summary!.outcome === 'nothing-to-do')) ?? false;
    const removed = await closeRun(run, batch, kept);
    // A first run that committed nothing leaves nothing: its summaries name no files (an error carries the same object).
    if (removed) for (const p of parts) if (p.summary) p.summary.files = { ...p.summary.files, duckdb: null, parquet: null, partitionsWritten: [], removed: true };
  }
}

const FIRST_RUN_MESSAGE =
  'nothing has been exported to this data directory yet: give the first export a start with --since 2026-01-01 ' +
  '(or startDate in the configuration), or load history with `session-etl backfill --from … --to …`';

export class FirstRunNeedsSinceError extends Error {
  override readonly name = 'FirstRunNeedsSinceError';
  readonly exitCode = ExitCode.usage;
}

/** Lowest --max-requests-per-second accepted: below it a run would seem to hang (docs/configuration.md). */
export const MIN_REQUESTS_PER_SECOND = 0.01;

/** A single-account run's batch: the store options are the run's own. */
function batchOf(opts: PipelineOptions): BatchOptions {
  return { ...opts, accounts: 'single', concurrency: 1, ...datasetOf(opts) };
}

/** The dataset location of a run's options (`parquetUrl`), parsed; nothing for the data directory's own. */
export function datasetOf(opts: Pick<PipelineOptions, 'parquetUrl' | 's3PathStyle'>): { dataset?: DatasetLocation } {
  return opts.parquetUrl ? { dataset: parseParquetUrl(opts.parquetUrl, opts.s3PathStyle ?? false) } : {};
}

/** The one result of a single-account batch: its summary, or its error thrown. */
function only(results: AccountResult[]): RunSummary {
  const r = results[0]!;
  if (r.ok) return r.summary!;
  throw r.error;
}

/** Refuses (RangeError) options that cannot make a run, before anything is opened. */
function checkJob(job: AccountJob): void {
  if (job.refused) return;
  const opts = job.opts;
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
  if (job.kind === 'verify') checkVerifyJob(job.opts);
  if (job.kind === 'backfill' || job.kind === 'verify') {
    const { from, to } = job.opts;
    if (!Number.isInteger(from) || !Number.isInteger(to)) throw new RangeError('from and to must be whole epoch seconds');
    if (from >= to) throw new RangeError(`--from (${isoOf(from)}) must be before --to (${isoOf(to)})`);
    // Refused before anything is written (the plan inside the run is never larger than this range).
    const before = job.kind === 'verify' ? job.opts.beforeCheckpoint : undefined;
    checkPlanSize([{ start: before !== undefined ? Math.max(from, to - before) : from, end: to }], opts.chunkSeconds ?? DEFAULTS.chunkSeconds);
  }
}

/** A verify's own options: --sample a positive whole number; --delete-missing only with --repair; --max-delete only with it. */
function checkVerifyJob(opts: VerifyOptions): void {
  if (opts.sample !== undefined && (!Number.isInteger(opts.sample) || opts.sample <= 0)) throw new RangeError(`sample must be a positive whole number of days, got ${opts.sample}`);
  if (opts.deleteMissing && !opts.repair) throw new RangeError('delete-missing goes with repair: it removes sessions the source no longer returns while repairing the rest');
  if (opts.maxDelete !== undefined && (!Number.isInteger(opts.maxDelete) || opts.maxDelete < 0)) throw new RangeError(`maxDelete must be a whole number of sessions, 0 or more; got ${opts.maxDelete}`);
  if (opts.maxDelete !== undefined && !opts.deleteMissing) throw new RangeError('maxDelete goes with deleteMissing: it allows that many removals');
}

interface Plan {
  range: Window | null;
  todo: Window[];
  resumed: boolean;
  backfill?: Window;
  /** A verify's days drawn by --sample. */
  sampled?: string[] | null;
}

/** One account's part of a run: what it counts, and where it got to. */
interface Part {
  job: AccountJob;
  tally: RunTally;
  logger: Logger;
  windowsTotal: number;
  plan?: Plan;
  outcome?: ExtractOutcome;
  controller?: RateController;
  /** Its `_runs` row is written (outcome running until the end). */
  recorded: boolean;
  summary?: RunSummary;
  /** Why it failed before its windows were fetched (a plan refused, say), or afterwards. */
  error?: unknown;
  /** A verify's comparison (verify.ts). */
  verifier?: AccountVerifier;
}

function newPart(job: AccountJob, runId: string | undefined, now: () => number, batchLogger: Logger): Part {
  const part: Part = { job, tally: undefined as unknown as RunTally, logger: batchLogger, windowsTotal: 0, recorded: false };
  startPart(part, runId, now, batchLogger);
  return part;
}

/** (Re)starts a part's tally and logger: a part's run begins when its account's turn comes. */
function startPart(part: Part, runId: string | undefined, now: () => number, batchLogger: Logger): void {
  const { job } = part;
  const startedMs = (job.opts.now ?? now)();
  const id = job.opts.runId ?? runId ?? newRunId(job.kind, startedMs);
  const base = job.opts.logger ?? batchLogger;
  part.logger = base.child?.({ runId: id }) ?? base;
  part.tally = new RunTally(id, job.kind, startedMs, job.account);
}

/** The accounts' parts, at most `concurrency` at a time; none starts after a stop. A part's failure is its own. */
async function eachAccount(parts: Part[], concurrency: number, stop: AbortSignal | undefined, fn: (p: Part) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < parts.length) {
      const part = parts[next++]!;
      if (stop?.aborted && parts.length > 1) {
        part.error = new AccountNotStartedError(part.job.account);
        continue;
      }
      try {
        await fn(part);
      } catch (err) {
        part.error = err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, parts.length)) }, worker));
}

/** An account not started because the command was stopped (SIGINT/SIGTERM) first. */
export class AccountNotStartedError extends Error {
  override readonly name = 'AccountNotStartedError';
  constructor(readonly account: string) {
    super(`account ${account} not started: the command was stopped first`);
  }
}

/** What a crash left: committed windows not merged, Parquet partitions not rewritten, runs that died. Returns the partitions written. */
async function recover(store: SessionStore, runId: string, lock: Lock | undefined, logger: Logger): Promise<string[]> {
  const recovered = await store.flush();
  if (recovered.partitions.length) logger.info({ partitions: recovered.partitions.length }, 'finished Parquet rewrites left by an earlier run');
  // No other run can be going while we hold the lock: one still marked running was killed or crashed.
  const died = await store.recordDiedRuns(runId, lock?.tookOverFrom);
  if (died.length) logger.warn({ runs: died }, `recorded ${died.length === 1 ? 'an earlier run' : 'earlier runs'} that died without an outcome as died`);
  return recovered.partitions;
}

/** One account: plan its windows, record its start, fetch and commit every window. */
async function fetchAccount(store: SessionStore, part: Part, batch: BatchOptions, committed: () => void): Promise<void> {
  const { job, tally, logger } = part;
  const opts = job.opts;
  if (job.refused) {
    // Recorded as the account's failed run (finish writes its error), nothing fetched.
    await store.recordRun(tally.row());
    part.recorded = true;
    throw job.refused;
  }
  const now = opts.now ?? batch.now ?? Date.now;
  const sleep = opts.sleep ?? batch.sleep ?? realSleep;
  const p = await planOf(store, job, tally.startedMs / 1000);
  part.plan = p;
  const windows = windowsOf(p, opts);
  part.windowsTotal = windows.length;
  tally.range = p.range;
  await store.recordRun(tally.row());
  part.recorded = true;
  committed();
  if (p.backfill && !p.resumed) await store.beginBackfill(job.account, p.backfill, tally.runId);
  logger.info(
    { range: p.range ? describeWindow(p.range) : null, windows: windows.length, resumed: p.resumed },
    windows.length ? `${job.kind} started` : `${job.kind}: nothing to fetch`,
  );
  const controller = rateControllerFor(opts, now, sleep, logger);
  part.controller = controller;
  const loader = new WindowLoader(store, job.account, tally.runId, opts.onInvalid ?? 'fail', tally, logger, () => {
    committed();
    opts.onProgress?.({ windowsTotal: windows.length, windowsDone: tally.stats.windowsDone, sessions: tally.totals.fetched });
  });
  // A verify compares each window with the store instead of committing it.
  const verifier = job.kind === 'verify' ? (part.verifier = await AccountVerifier.open(store, job.account, job.opts, tally)) : undefined;
  const onWindow = verifier
    ? (w: Window, body: SessionsBody, at: number) => verifier.add(w, body, at).then(() => committed())
    : (w: Window, body: SessionsBody, at: number) => loader.load(w, body, at);
  const stopSignal = opts.stopSignal ?? batch.stopSignal;
  const abortSignal = opts.abortSignal ?? batch.abortSignal;
  part.outcome = await extractWindows({
    client: reportingClientFor(opts, controller, tally, logger, now, sleep),
    windows,
    controller,
    maxConcurrency: opts.concurrency ?? DEFAULTS.concurrency,
    ...(batch.memory ? { commitSlots: batch.memory.commitSlots } : {}),
    ...(opts.maxResultsPerQuery ? { maxResultsPerQuery: opts.maxResultsPerQuery } : {}),
    minChunkSeconds: opts.minChunkSeconds ?? DEFAULTS.minChunkSeconds,
    ...(stopSignal ? { stopSignal } : {}),
    ...(abortSignal ? { abortSignal } : {}),
    now,
    stats: tally.stats,
    // A bisection's reason quotes the server: one printable line, clipped, like the run's error.
    onLog: (event, fields) => logger.info(clipStrings(fields), event),
    onWindow,
  });
  // Compared whole (and repaired) before the run's last flush; a stopped or failed verify compares nothing.
  if (verifier && !part.outcome.error && !part.outcome.skipped.length) {
    try {
      await verifier.settle(tally.runId, logger);
    } catch (err) {
      part.outcome = { ...part.outcome, error: err instanceof Error ? err : new Error(String(err)) };
    }
  }
}

/** An account's windows to fetch: a backfill's range (less what an interrupted run of it committed), or an export's. */
async function planOf(store: SessionStore, job: AccountJob, nowS: number): Promise<Plan> {
  const opts = job.opts;
  const settle = opts.settleSeconds ?? DEFAULTS.settleSeconds;
  const log = opts.logger ?? silentLogger;
  if (job.kind === 'verify') {
    const cp = job.opts.beforeCheckpoint !== undefined ? checkpointOf(await store.coverage(job.account)) : undefined;
    return { ...verifyPlan(job.opts, nowS, settle, cp), resumed: false };
  }
  if (job.kind === 'backfill') {
    const to = Math.min(job.opts.to, Math.floor(nowS - settle));
    const from = job.opts.from;
    if (from >= to) {
      log.warn({ settleEnd: isoOf(to) }, `nothing to fetch: the whole range starts at or after now - settle (${isoOf(to)}); sessions that recent are not fetched yet`);
      return { range: null, todo: [], resumed: false };
    }
    if (to < job.opts.to) log.warn({ to: isoOf(to) }, `--to is later than now - settle; the backfill stops at ${isoOf(to)}`);
    const range = { start: from, end: to };
    const open = await store.openBackfill(job.account, range);
    let todo: Window[] = [range];
    if (open) todo = subtractIntervals(range, await store.coverageSince(job.account, open.startedAtMs));
    return { range, todo, resumed: Boolean(open), backfill: range };
  }
  const lookback = job.opts.lookbackSeconds ?? DEFAULTS.lookbackSeconds;
  const to = Math.floor(nowS - settle);
  const checkpoint = checkpointOf(await store.coverage(job.account));
  let from: number;
  if (checkpoint === undefined) {
    if (job.opts.since === undefined) throw new FirstRunNeedsSinceError(FIRST_RUN_MESSAGE);
    from = job.opts.since;
  } else {
    from = checkpoint - lookback;
    if (job.opts.since !== undefined && job.opts.since < from && job.opts.warnIfSinceUnused) {
      log.warn(
        { since: isoOf(job.opts.since), checkpoint: isoOf(checkpoint) },
        `--since ${isoOf(job.opts.since)} is not used: this data directory has a checkpoint (${isoOf(checkpoint)}), and an export ` +
          `continues from it (less the lookback, from ${isoOf(from)}); to load or re-read what is before, run ` +
          `\`${resumeCommand({ start: job.opts.since, end: from }, store, job.account)}\``,
      );
    }
    if (job.opts.since !== undefined) from = Math.max(from, Math.min(job.opts.since, checkpoint));
  }
  if (from >= to) return { range: null, todo: [], resumed: false };
  const range = { start: from, end: to };
  return { range, todo: [range], resumed: false };
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

/** The reporting client of an account's run: every answer, retry and 429 reaches its rate controller. */
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
    ...(opts.apiKeySource ? { keySource: opts.apiKeySource } : {}),
    ...(opts.reportingUrlSource ? { urlSource: opts.reportingUrlSource } : {}),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.maxBodyBytes ? { maxBodyBytes: opts.maxBodyBytes } : {}),
    ...opts.retry,
    now,
    sleep,
    logger,
    // The client counts requests, retries and 429s (and logs each retry): the tally's are its counts.
    counts: tally.stats,
    hooks: {
      beforeAttempt: (signal) => controller.beforeAttempt(signal),
      onRateLimited: (ms, isDate) => {
        controller.onRateLimited(ms, isDate);
        logger.warn({ retryAfterMs: ms, concurrency: controller.concurrency, pace: controller.pace }, 'rate limited (429): pausing all workers');
      },
      onSuccess: () => controller.onSuccess(),
      onResponseHeaders: (headers) => {
        const hint = readRateLimitHeaders(headers, now());
        if (hint) controller.onRateLimitHint(hint);
      },
    },
  });
}

/** Merges and Parquet rewrites at least every `seconds` while windows are fetched; returns the stop. */
function flushPeriodically(store: SessionStore, onFlush: (r: FlushResult) => void, seconds: number, logger: Logger): () => void {
  if (seconds <= 0) return () => {};
  const timer = setInterval(() => {
    store.flush().then(onFlush, (err) =>
      logger.warn({ err: String(err) }, 'periodic flush (merge, Parquet rewrite) failed; it is retried at the end of the run'),
    );
  }, seconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * The end of a run whose accounts were all tried: one last flush and coverage compaction for the
 * store, then each account's backfill bookkeeping, summary and `_runs` row.
 */
async function finish(store: SessionStore, parts: Part[], batch: BatchOptions, now: () => number): Promise<AccountResult[]> {
  const last = await store.flush();
  for (const p of parts) p.tally.addLastFlush(last);
  await store.compactCoverage();
  const results: AccountResult[] = [];
  for (const part of parts) {
    const durationMs = now() - part.tally.startedMs;
    if (part.error !== undefined || !part.outcome || !part.plan) {
      const error = part.error ?? new Error('the account did not run');
      if (part.recorded) await store.recordRun(part.tally.failedRow(now() / 1000, clipText(oneLine(redact(String((error as Error)?.message ?? error))))));
      results.push({ account: part.job.account, ok: false, error, durationMs });
      continue;
    }
    const summary = await summarise(store, part, batch, now);
    part.summary = summary;
    if (summary.kind === 'verify' && (summary as VerifySummary).verify && !part.outcome.error && summary.outcome === 'failed') {
      results.push({ account: part.job.account, ok: false, error: new VerifyDifferencesError(summary.error ?? 'the store differs from the source', summary as VerifySummary), summary, durationMs });
      continue;
    }
    const { kind } = part.job;
    const { runId } = part.tally;
    if (part.outcome.error) {
      // The error itself is told once, with the summary (the CLI prints it after it; the caller catches it).
      part.logger.error({ checkpoint: summary.checkpoint }, `${kind} failed`);
      const error = Object.assign(
        new RunFailedError(`${kind} ${runId} failed: ${summary.error}`, runId, { cause: part.outcome.error }, settingExitCode(part.outcome.error)),
        { summary },
      );
      results.push({ account: part.job.account, ok: false, error, summary, durationMs });
    } else if (summary.outcome === 'interrupted') {
      const stopExitCode = part.job.opts.stopExitCode ?? batch.stopExitCode ?? 130;
      // A backfill resumes when run again over the same range (its end as clamped here): say how.
      const resume = part.plan.backfill ? `; to resume it, run \`${resumeCommand(part.plan.backfill, store, part.job.account)}\`` : '';
      const error = Object.assign(
        new RunInterruptedError(`${kind} ${runId} stopped: ${summary.windows.skipped} windows not started; ${committedNote(summary.checkpoint)}${resume}`, stopExitCode),
        { summary },
      );
      results.push({ account: part.job.account, ok: false, error, summary, durationMs });
    } else {
      part.logger.info({ sessions: part.tally.totals.written, windows: part.tally.stats.windowsDone, durationMs: summary.durationMs }, `${kind} finished`);
      results.push({ account: part.job.account, ok: true, summary, durationMs });
    }
  }
  // Read once every account is recorded (a verify's confirmed days included); the summaries (also
  // those the errors carry) gain them.
  const anomalies = await volumeAnomaliesAfter(store, batch, parts);
  for (const p of parts) {
    const found = anomalies.get(p.job.account);
    if (p.summary && found) p.summary.volumeAnomalies = found;
  }
  return results;
}

/**
 * Each account's volume anomalies after the run's last flush (for its summary and notifications);
 * none read when the check is off. A failure to read them is logged, never the run's failure.
 */
async function volumeAnomaliesAfter(store: SessionStore, batch: BatchOptions, parts: readonly Part[]): Promise<Map<string, VolumeAnomaly[]>> {
  const rule = batch.volumeRule ?? DEFAULT_VOLUME_RULE;
  if (!(rule.threshold > 0)) return new Map();
  try {
    const found = await store.volumeAnomalies(rule);
    // An account with no coverage yet has none.
    for (const p of parts) if (!found.has(p.job.account)) found.set(p.job.account, []);
    return found;
  } catch (err) {
    (batch.logger ?? silentLogger).warn({ err: String(err) }, 'could not count the sessions per day for the volume-anomaly check');
    return new Map();
  }
}

/** An account's summary after the last flush, recorded as its `_runs` row. */
async function summarise(store: SessionStore, part: Part, batch: BatchOptions, now: () => number): Promise<RunSummary> {
  const { tally, plan: p, outcome, controller, job } = part as Required<Pick<Part, 'plan' | 'outcome' | 'controller'>> & Part;
  const opts = job.opts;
  const stopped = Boolean(opts.stopSignal?.aborted || opts.abortSignal?.aborted || batch.stopSignal?.aborted || batch.abortSignal?.aborted);
  const interrupted = !outcome.error && outcome.skipped.length > 0 && stopped;
  const report = part.verifier && !outcome.error && !interrupted ? await part.verifier.report({ todo: p.todo, sampled: p.sampled ?? null }, now() / 1000) : null;
  const differs = report !== null && !report.equal;
  const failed = Boolean(outcome.error) || differs;
  if (p.backfill && !failed && !interrupted) await store.completeBackfill(job.account, p.backfill);
  const coverage = await store.coverage(job.account);
  const cp = checkpointOf(coverage);
  // The server's part made one printable line (no terminal control sequences) and clipped (a hostile
  // or broken server may answer megabytes), the note on what is committed and the advice kept whole.
  // A verify commits no windows (only its repair does, at its end): no checkpoint to continue from.
  const error = outcome.error
    ? `${clipText(oneLine(redact(outcome.error.message)))}; ${job.kind === 'verify' ? 'the verify did not finish comparing' : committedNote(cp !== undefined ? isoOf(cp) : null)}; ` +
      (needsSettingFixed(outcome.error) ? 'running it again will not help until that is fixed' : job.kind === 'verify' ? 'run the same command again' : 'run the same command again to continue')
    : differs && p.range
      ? clipText(oneLine(redact(differencesText(report, suggestedCommand('verify', rangeArgs(p.range), targetOf(store, job.account))))))
      : undefined;
  const summary = tally.summary({
    outcome: failed ? 'failed' : interrupted ? 'interrupted' : part.windowsTotal ? 'succeeded' : 'nothing-to-do',
    resumed: p.resumed,
    windowsTotal: part.windowsTotal,
    skipped: outcome.skipped.length,
    coverage,
    pausedMs: controller.pausedMs,
    pace: controller.learnedRate,
    nowMs: now(),
    files: {
      dataDir: store.layout.dataDir,
      duckdb: store.format === 'parquet' ? null : store.layout.dbPath,
      parquet: store.format === 'duckdb' ? null : store.dataset.describe,
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
  const verified: VerifySummary | undefined = job.kind === 'verify' ? { ...summary, kind: 'verify', verify: report } : undefined;
  return verified ?? summary;
}

/** The backfill command that loads `range` into this store (an account's part of it with many accounts). */
function resumeCommand(range: Window, store: SessionStore, account: string): string {
  return suggestedCommand('backfill', rangeArgs(range), targetOf(store, account));
}

/** What a command suggested for an account of this store runs against. */
function targetOf(store: SessionStore, account: string): CommandTarget {
  return { dataDir: store.layout.dataDir, account: account || undefined };
}

/** 2 when the run failed on a wrong address (a refused first connection), else 1. */
function settingExitCode(err: unknown): number {
  for (let cur = err, depth = 0; cur instanceof Error && depth < 8; cur = cur.cause, depth++) {
    if (cur instanceof EndpointUnreachableError) return cur.exitCode;
  }
  return ExitCode.runFailed;
}

function committedNote(checkpoint: string | null): string {
  return checkpoint !== null ? `data up to ${checkpoint} is committed` : 'no window was committed';
}

/** Log fields with every string made one printable line, redacted and clipped (they may quote the server). */
function clipStrings(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? clipText(oneLine(redact(v))) : v]));
}
