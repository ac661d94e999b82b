/**
 * The orchestrator: a run on one store for one or more accounts (a single-account run is the case of
 * one account, ''), in the six steps docs/design.md "How a run works" names.
 */
import { hostname } from 'node:os';
import pLimit from 'p-limit';
import { holdsStore } from '../store/layout.js';
import { DataDirError } from '../store/errors.js';
import type { Lock } from '../store/lock.js';
import { SINGLE_ACCOUNT, type FlushResult, type SessionStore } from '../store/session-store.js';
import { StatePublisher } from '../store/state-snapshot.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { redact } from '../util/redact.js';
import { begin, fetchAccount, newPart, type Part } from './account-run.js';
import { errorText, finish } from './finish-run.js';
import { closeRun, openRun } from './open-run.js';
import { newRunId, type AccountJob, type AccountResult, type BackfillOptions, type BatchOptions, type ExportOptions, type Progress, type RunSummary, type VerifyOptions } from './options.js';
import { checkFirstExport } from './plan.js';
import { batchOf, checkedJob, planMemory, resolveBatch } from './resolve-options.js';
import type { VerifySummary } from './verify.js';

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
export { FirstRunNeedsSinceError } from './plan.js';
export { datasetOf, MIN_REQUESTS_PER_SECOND } from './resolve-options.js';

/** Loads `[from, to)` (to clamped to now - settle). Re-running an interrupted backfill of the same range resumes it. */
export async function runBackfill(opts: BackfillOptions): Promise<RunSummary> {
  return runOne({ account: SINGLE_ACCOUNT, kind: 'backfill', opts });
}

/**
 * Fetches `[from, to)` (or `sample` random days of it) as a backfill would and compares it with the
 * store; with `repair`, makes them equal. Throws VerifyDifferencesError when they still differ.
 */
export async function runVerify(opts: VerifyOptions): Promise<VerifySummary> {
  const job: AccountJob = { account: SINGLE_ACCOUNT, kind: 'verify', opts };
  checkedJob(job, batchOf(opts));
  if (!holdsStore(opts.dataDir)) {
    throw new DataDirError(`no session-etl data in ${opts.dataDir}: verify compares the source with what a backfill or export stored; run one first`);
  }
  return (await runOne(job)) as VerifySummary;
}

/** Incremental: from checkpoint - lookback (or `since` on the first run) to now - settle. */
export async function runExport(opts: ExportOptions): Promise<RunSummary> {
  const job: AccountJob = { account: SINGLE_ACCOUNT, kind: 'export', opts };
  // With the dataset in a bucket, the state may be there rather than here (format parquet): the plan decides.
  checkFirstExport(checkedJob(job, batchOf(opts)).opts, opts.parquetUrl !== undefined || holdsStore(opts.dataDir));
  return runOne(job);
}

/** A single-account run, a batch of one account whose store options are its own: its summary, or its error thrown. */
async function runOne(job: AccountJob): Promise<RunSummary> {
  const r = (await runBatch(batchOf(job.opts), [job]))[0]!;
  if (r.ok) return r.summary!;
  throw r.error;
}

/**
 * Runs the jobs of several accounts on one store, at most `batch.concurrency` at a time, each with
 * its own rate control, client and options; commits, merges and Parquet rewrites are shared. One
 * account's failure is its own result; a failure of the store itself (its lock, a full disk) is thrown.
 */
export async function runBatch(given: BatchOptions, jobsGiven: readonly AccountJob[]): Promise<AccountResult[]> {
  // Options and the memory budget resolved and checked before anything is opened (a refusal: exit 2).
  const checked = jobsGiven.map((job) => checkedJob(job, given));
  const memory = planMemory(given, checked, given.logger ?? silentLogger);
  const batch = resolveBatch(given, memory.split);
  const { jobs } = memory;
  const { now, logger } = batch;
  const startedMs = now();
  const kind = jobs[0]?.kind ?? 'export';
  const batchRunId = jobs.length === 1 && jobs[0]!.opts.runId ? jobs[0]!.opts.runId : newRunId(jobs.length === 1 ? kind : `${kind}-accounts`, startedMs);
  // Step 1: the store taken (and what a crash left finished: recover).
  const run = await openRun(batch, `${kind} (run ${batchRunId})`, batchRunId, logger);
  const { store } = run;
  const publisher = new StatePublisher(
    store,
    { runId: batchRunId, pid: process.pid, host: hostname(), startedAt: new Date(startedMs).toISOString(), command: `${kind} (run ${batchRunId})` },
    { now, onError: (err) => logger.warn({ err: String(err) }, 'could not write the state snapshot (state.json); the run goes on'), volume: batch.volumeRule },
  );
  const single = jobs.length === 1 ? batchRunId : undefined;
  const parts: Part[] = jobs.map((job) => newPart(job, single));
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
      batch.parquetFlushSeconds,
      logger,
    );
    const committed = () => {
      const pr = progressOf(parts);
      publisher.soon(pr);
      batch.onProgress?.(pr);
    };
    // Steps 2 to 4, for each account: plan, extract, load.
    await eachAccount(parts, batch.concurrency, batch.stopSignal, async (part) => {
      if (!single) Object.assign(part, begin(part.job, undefined));
      part.fetched = await fetchAccount(store, part, batch, committed);
    });
    stopFlushing();
    // Steps 5 and 6: the last flush, each account's run recorded.
    results = await finish(store, parts, batch);
    return results;
  } catch (err) {
    // The store failed (its final flush, say): every account's run that was recorded as running is recorded as failed.
    for (const p of parts) {
      if (p.recorded && !p.summary) await store.recordRun(p.tally.failedRow(now() / 1000, errorText(err))).catch(() => {});
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

/** The progress of all the accounts' parts (the progress bar's and the state snapshot's). */
function progressOf(parts: readonly Part[]): Progress {
  return {
    windowsTotal: parts.reduce((n, p) => n + p.windowsTotal, 0),
    windowsDone: parts.reduce((n, p) => n + p.tally.stats.windowsDone, 0),
    sessions: parts.reduce((n, p) => n + p.tally.totals.fetched, 0),
  };
}

/** The accounts' parts, at most `concurrency` at a time, in order; none starts after a stop. A part's failure is its own. */
async function eachAccount(parts: Part[], concurrency: number, stop: AbortSignal | undefined, fn: (p: Part) => Promise<void>): Promise<void> {
  const limit = pLimit(Math.max(1, concurrency));
  await Promise.all(
    parts.map((part) =>
      limit(async () => {
        if (stop?.aborted && parts.length > 1) {
          part.error = new AccountNotStartedError(part.job.account);
          return;
        }
        await fn(part).catch((err: unknown) => {
          part.error = err;
        });
      }),
    ),
  );
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
