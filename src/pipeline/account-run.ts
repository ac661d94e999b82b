/** One account's part of a run (run.ts drives them): its tally and logger, then the run's steps 2 to 4 for it. */
import { formatSize } from '../config/memory-budget.js';
import { ReportingClient } from '../reporting/client.js';
import type { SessionStore } from '../store/session-store.js';
import { describeWindow } from '../time/windows.js';
import { clipText } from '../util/clip-text.js';
import type { Logger } from '../util/logger.js';
import { redact } from '../util/redact.js';
import { oneLine } from '../util/terminal-text.js';
import { extractWindows, type ExtractOutcome } from './extract.js';
import { newRunId, type Resolved, type ResolvedBatch, type ResolvedJob, type PipelineOptions, type RunSummary } from './options.js';
import { planOf, windowsOf, type Plan } from './plan.js';
import { RateController } from './rate-controller.js';
import { readRateLimitHeaders } from './rate-limit-headers.js';
import { RunTally } from './run-tally.js';
import { AccountVerifier } from './verify.js';
import { WindowLoader } from './window-loader.js';

/** One account's part of a run: what it counts, and where it got to. */
export interface Part {
  job: ResolvedJob;
  tally: RunTally;
  logger: Logger;
  /** Windows planned (0 until planned): the progress bar's total. */
  windowsTotal: number;
  /** Its `_runs` row is written (outcome running until the end). */
  recorded: boolean;
  fetched?: Fetched;
  /** Why it failed, before its windows were fetched (a plan refused, say) or after. */
  error?: unknown;
  summary?: RunSummary;
  /** A verify's comparison (verify.ts), closed when the run ends. */
  verifier?: AccountVerifier;
}

/** An account's windows fetched: its plan, how extraction ended, and its rate control's figures. */
export interface Fetched {
  plan: Plan;
  outcome: ExtractOutcome;
  controller: RateController;
}

/** A part not started yet; `runId` is the batch's when the batch is this one account. */
export function newPart(job: ResolvedJob, runId: string | undefined): Part {
  return { job, windowsTotal: 0, recorded: false, ...begin(job, runId) };
}

/** A part's tally and logger from now: a part's run begins when its account's turn comes. */
export function begin(job: ResolvedJob, runId: string | undefined): Pick<Part, 'tally' | 'logger'> {
  const startedMs = job.opts.now();
  const id = job.opts.runId ?? runId ?? newRunId(job.kind, startedMs);
  const base = job.opts.logger;
  return { logger: base.child?.({ runId: id }) ?? base, tally: new RunTally(id, job.kind, startedMs, job.account) };
}

/** One account: plan its windows, record its start, fetch and load (or compare) every window. */
export async function fetchAccount(store: SessionStore, part: Part, batch: ResolvedBatch, committed: () => void): Promise<Fetched> {
  const { job, tally, logger } = part;
  const opts = job.opts;
  const plan = job.refused ? undefined : await planOf(store, job, tally.startedMs / 1000);
  const windows = plan ? windowsOf(plan, opts) : [];
  part.windowsTotal = windows.length;
  tally.range = plan?.range ?? null;
  await store.recordRun(tally.row());
  part.recorded = true;
  // A refused part is recorded as the account's failed run (finish writes its error), nothing fetched.
  if (!plan) throw job.refused;
  committed();
  if (plan.backfill && !plan.resumed) await store.beginBackfill(job.account, plan.backfill, tally.runId);
  logger.info(
    { range: plan.range ? describeWindow(plan.range) : null, windows: windows.length, resumed: plan.resumed },
    windows.length ? `${job.kind} started` : `${job.kind}: nothing to fetch`,
  );
  const controller = new RateController({
    maxConcurrency: opts.concurrency,
    now: opts.now,
    sleep: opts.sleep,
    log: (fields) => logger.debug(fields, 'rate control: a burst of 429s judged'),
    maxRequestsPerSecond: opts.maxRequestsPerSecond,
  });
  const loader = new WindowLoader(store, job.account, tally.runId, opts.onInvalid, tally, logger, () => {
    committed();
    opts.onProgress?.({ windowsTotal: windows.length, windowsDone: tally.stats.windowsDone, sessions: tally.totals.fetched });
  });
  // A verify compares each window with the store instead of committing it.
  const verifier = job.kind === 'verify' ? (part.verifier = await AccountVerifier.open(store, job.account, job.opts, tally)) : undefined;
  const outcome = await extractWindows({
    client: reportingClientFor(opts, controller, tally, logger),
    windows,
    controller,
    maxConcurrency: opts.concurrency,
    commitSlots: batch.memory.commitSlots,
    answers: batch.answers,
    maxResultsPerQuery: opts.maxResultsPerQuery,
    minChunkSeconds: opts.minChunkSeconds,
    stopSignal: opts.stopSignal,
    abortSignal: opts.abortSignal,
    now: opts.now,
    stats: tally.stats,
    // A bisection's reason quotes the server: one printable line, clipped, like the run's error.
    onLog: (event, fields) => logger.info(clipStrings(fields), event),
    onWindow: verifier ? (w, body, at) => verifier.add(w, body, at).then(committed) : (w, body, at) => loader.load(w, body, at),
  });
  const a = batch.answers;
  logger.debug({ answers: { peakBytes: a.peak, limitBytes: a.limit, waits: a.waits } }, `answers held at most ${formatSize(a.peak)} of the ${formatSize(a.limit)} share`);
  return { plan, controller, outcome: verifier ? await verifier.settleAfter(outcome, logger) : outcome };
}

/** The reporting client of an account's run: every answer, retry and 429 reaches its rate controller. */
function reportingClientFor(opts: Resolved<PipelineOptions>, controller: RateController, tally: RunTally, logger: Logger): ReportingClient {
  return new ReportingClient({
    url: opts.reportingUrl,
    apiKey: opts.apiKey,
    keySource: opts.apiKeySource,
    urlSource: opts.reportingUrlSource,
    fetch: opts.fetch,
    timeoutMs: opts.timeoutMs,
    maxBodyBytes: opts.maxBodyBytes,
    ...opts.retry,
    now: opts.now,
    sleep: opts.sleep,
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
        const hint = readRateLimitHeaders(headers, opts.now());
        if (hint) controller.onRateLimitHint(hint);
      },
    },
  });
}

/** Log fields with every string made one printable line, redacted and clipped (they may quote the server). */
function clipStrings(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? clipText(oneLine(redact(v))) : v]));
}
