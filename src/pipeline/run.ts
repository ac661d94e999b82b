/**
 * The orchestrator: one run = resolve the range → open the store (finishing any Parquet rewrite a
 * crash left pending) → cut windows → extract under rate control → validate and flatten → commit
 * each window atomically → rewrite touched Parquet partitions → record the run.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rmdir, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { DataDirError, StoreBusyError } from '../store/errors.js';
import { StatePublisher, STATE_FILE } from '../store/state-snapshot.js';
import { acquireLock, type Lock, type LockHolder } from '../store/lock.js';
import { ReportingClient, type RetryOptions } from '../reporting/client.js';
import type { FetchLike } from '../reporting/transport.js';
import { checkWriterSettings, discardNew, SessionStore, type RunRow } from '../store/session-store.js';
import { DIR_MODE, layoutOf, refuseLinks, type OutputFormat } from '../store/layout.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { needsSettingFixed } from '../reporting/errors/reporting-error.js';
import { redact } from '../util/redact.js';
import { realSleep, type Sleep } from '../util/sleep.js';
import { ExitCode } from '../errors.js';
import { RunFailedError, RunInterruptedError } from './errors.js';
import { extractWindows, type ExtractStats } from './extract.js';
import { flattenResponse, type InvalidPolicy } from './flatten.js';
import { checkpointOf, holes, subtractIntervals } from '../time/intervals.js';
import { RateLimitedError } from '../reporting/errors/rate-limited-error.js';
import { RateController, readRateLimitHeaders } from './rate-controller.js';
import { checkPlanSize, cutWindows, describeWindow, formatDuration, isoOf, parseDuration, type Window } from '../time/windows.js';
import { CONFIG_DEFAULTS } from '../config/defaults.js';

export interface PipelineOptions {
  /** Reporting endpoint (REPORTING_URL). */
  reportingUrl: string;
  /** Reporting API key (REPORTING_API_KEY). */
  apiKey: string;
  dataDir: string;
  /**
   * What to write. Default: the format the data directory recorded on its first run (a new one: both).
   * One that differs from the recorded format is refused (DataDirError, exit 2).
   */
  format?: OutputFormat;
  /** Chunk length in seconds. Default 1 day. */
  chunkSeconds?: number;
  /** Maximum concurrent requests. Default 4. */
  concurrency?: number;
  /** A window returning at least this many records is split (the server may cap silently). */
  maxResultsPerQuery?: number;
  /** Smallest window bisection may produce, seconds. Default 60. */
  minChunkSeconds?: number;
  /** Never fetch closer to now than this, seconds. Default 600. */
  settleSeconds?: number;
  /** `fail` (default): an invalid record fails its window; `quarantine`: it goes to rejected_sessions. */
  onInvalid?: InvalidPolicy;
  /** Fetch the most recent windows first. */
  newestFirst?: boolean;
  /** Upper bound on requests per second (besides the rate learned from 429s). */
  maxRequestsPerSecond?: number;
  /** Per-request timeout, ms. Default 60 000. */
  timeoutMs?: number;
  /** Largest answer body, bytes; a larger one splits its window. Default 256 MiB. */
  maxBodyBytes?: number;
  retry?: Partial<RetryOptions>;
  /** Rewrite pending Parquet partitions at least this often during a run, seconds. Default 60. */
  parquetFlushSeconds?: number;
  fetch?: FetchLike;
  /** Clock, ms since the epoch. */
  now?: () => number;
  sleep?: Sleep;
  logger?: Logger;
  /** Soft stop: no new windows start; running ones finish and commit. */
  stopSignal?: AbortSignal;
  /** Hard stop: running requests are aborted (nothing half-written is committed). */
  abortSignal?: AbortSignal;
  /** Exit code to report when stopped by a signal (130 or 143). */
  stopExitCode?: number;
  onProgress?: (p: Progress) => void;
  /** Run id (generated when absent). */
  runId?: string;
  /**
   * The data directory's one-writer lock. Default: taken, failing at once (LockHeldError, exit 3)
   * when another run holds it; `{ wait: true }` queues behind it; `false` when the caller holds it.
   */
  lock?:
    | false
    | {
        wait?: boolean;
        /** How long --wait waits for the lock, and then for readers to close the DuckDB file, ms (default: forever). */
        waitTimeoutMs?: number;
        onWait?: (holder: LockHolder | undefined) => void;
        /** Called once when the DuckDB file is found held by another process (a reader) and the run waits. */
        onStoreBusy?: (err: StoreBusyError) => void;
      };
}

export interface BackfillOptions extends PipelineOptions {
  /** Range start, epoch seconds (inclusive). */
  from: number;
  /** Range end, epoch seconds (exclusive); clamped to now - settle. */
  to: number;
}

export interface ExportOptions extends PipelineOptions {
  /** Where the first export starts when nothing is stored yet, epoch seconds. */
  since?: number;
  /** How far before the checkpoint each export re-reads, seconds. Default 1 day. */
  lookbackSeconds?: number;
}

export interface Progress {
  windowsTotal: number;
  windowsDone: number;
  sessions: number;
}

export interface RunSummary {
  runId: string;
  kind: 'backfill' | 'export';
  outcome: 'succeeded' | 'failed' | 'interrupted' | 'nothing-to-do';
  range: { from: string; to: string } | null;
  resumed: boolean;
  windows: { total: number; done: number; skipped: number };
  sessions: { written: number; new: number | null; updated: number | null; rejected: number; duplicatesDropped: number };
  requests: number;
  retries: number;
  rateLimited: number;
  /** Time all workers spent paused by 429s (Retry-After) or by rate-limit headers, ms. */
  pausedMs: number;
  /** The pace learned from 429s, requests per second (before probing past it); null when never limited. */
  pace: number | null;
  bisections: number;
  durationMs: number;
  checkpoint: string | null;
  coverageHoles: Array<{ from: string; to: string }>;
  files: { dataDir: string; duckdb: string | null; parquet: string | null; partitionsWritten: string[] };
  error?: string;
}

/** What a library run uses when an option is not given: the configuration's defaults (config/defaults.ts). */
export const DEFAULTS = {
  chunkSeconds: parseDuration(CONFIG_DEFAULTS.chunk),
  concurrency: CONFIG_DEFAULTS.concurrency,
  minChunkSeconds: parseDuration(CONFIG_DEFAULTS.minChunk),
  settleSeconds: parseDuration(CONFIG_DEFAULTS.settle),
  lookbackSeconds: parseDuration(CONFIG_DEFAULTS.lookback),
  parquetFlushSeconds: 60,
} as const;

export function newRunId(kind: string, nowMs: number): string {
  const ts = new Date(nowMs).toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${kind}-${ts}-${randomBytes(3).toString('hex')}`;
}

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
  const stored = (['both', 'parquet'] as const).some((f) => existsSync(layoutOf(opts.dataDir, f).dbPath));
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
  const chunk = opts.chunkSeconds ?? DEFAULTS.chunkSeconds;
  const maxConcurrency = opts.concurrency ?? DEFAULTS.concurrency;

  checkWriterSettings();
  let lock: Lock | undefined;
  let dirCreated: string | undefined;
  if (opts.lock !== false) {
    dirCreated = await ensureDataDir(opts.dataDir);
    // Before the lock: its directory must not be a link either.
    await refuseLinks(opts.dataDir).catch(async (err: unknown) => {
      await removeEmptyDirs(opts.dataDir, dirCreated);
      throw err;
    });
    lock = await acquireLock(layoutOf(opts.dataDir, 'both').lockPath, {
      command: `${kind} (run ${runId})`,
      runId,
      ...(opts.lock?.wait ? { wait: true } : {}),
      ...(opts.lock?.waitTimeoutMs !== undefined ? { waitTimeoutMs: opts.lock.waitTimeoutMs } : {}),
      ...(opts.lock?.onWait ? { onWait: opts.lock.onWait } : {}),
      ...(opts.stopSignal ? { signal: opts.stopSignal } : {}),
    });
  }
  let store: SessionStore;
  try {
    store = await openWhenFree(opts, logger);
  } catch (err) {
    await lock?.release();
    await removeEmptyDirs(opts.dataDir, dirCreated);
    throw err;
  }
  const publisher = new StatePublisher(
    store,
    { runId, pid: process.pid, host: hostname(), startedAt: new Date(startedMs).toISOString(), command: `${kind} (run ${runId})` },
    { now, onError: (err) => logger.warn({ err: String(err) }, 'could not write the state snapshot (state.json); the run goes on') },
  );
  const format = store.format;
  const stats: ExtractStats = { requests: 0, retries: 0, rateLimited: 0, bisections: 0, windowsDone: 0, records: 0 };
  const totals = { written: 0, inserted: 0, updated: 0, rejected: 0, duplicatesDropped: 0 };
  const partitionsWritten = new Set<string>();
  let summary: RunSummary | undefined;
  let runRecorded = false;
  let flushTimer: NodeJS.Timeout | undefined;
  try {
    // A crash may have left committed windows not merged, or Parquet partitions not rewritten yet.
    const recovered = await store.flush();
    recovered.partitions.forEach((p) => partitionsWritten.add(p));
    if (recovered.partitions.length) logger.info({ partitions: recovered.partitions.length }, 'finished Parquet rewrites left by an earlier run');

    // No other run can be going while we hold the lock: one still marked running was killed or crashed.
    const died = await store.recordDiedRuns(runId, lock?.tookOverFrom);
    if (died.length) logger.warn({ runs: died }, `recorded ${died.length === 1 ? 'an earlier run' : 'earlier runs'} that died without an outcome as died`);
    await store.beginRunCounts();
    const p = await plan(store, startedMs / 1000);
    checkPlanSize(p.todo, chunk);
    const windows = p.todo.flatMap((w) => cutWindows(w.start, w.end, chunk));
    if (opts.newestFirst) windows.reverse();
    const baseRow = (): RunRow => ({
      run_id: runId,
      kind,
      range_from: p.range?.start ?? null,
      range_to: p.range?.end ?? null,
      started_at: startedMs / 1000,
      ended_at: null,
      outcome: 'running',
      windows: stats.windowsDone,
      sessions_written: totals.written,
      sessions_new: totals.inserted,
      sessions_updated: totals.updated,
      rejected: totals.rejected,
      requests: stats.requests,
      retries: stats.retries,
      rate_limited: stats.rateLimited,
      bisections: stats.bisections,
      partitions_written: partitionsWritten.size,
      error: null,
    });
    await store.recordRun(baseRow());
    runRecorded = true;
    publisher.soon();
    if (p.backfill && !p.resumed) await store.beginBackfill(p.backfill, runId);
    logger.info(
      { range: p.range ? describeWindow(p.range) : null, windows: windows.length, resumed: p.resumed },
      windows.length ? `${kind} started` : `${kind}: nothing to fetch`,
    );

    const client = new ReportingClient({
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
        onRateLimited: (ms) => {
          stats.rateLimited++;
          controller.onRateLimited(ms);
          logger.warn({ retryAfterMs: ms, concurrency: controller.concurrency, pace: controller.pace }, 'rate limited (429): pausing all workers');
        },
        onSuccess: () => controller.onSuccess(),
        onResponseHeaders: (headers) => {
          const hint = readRateLimitHeaders(headers, now());
          if (hint) controller.onRateLimitHint(hint);
        },
        onRetry: ({ error, delayMs }) => {
          if (!(error instanceof RateLimitedError)) controller.onAttemptFailed();
          logger.warn({ kind: error.kind, delayMs, message: error.message }, 'retrying a request');
        },
      },
    });
    const controller = new RateController({
      maxConcurrency,
      now,
      sleep,
      log: (fields) => logger.debug(fields, 'rate control: a burst of 429s judged'),
      ...(opts.maxRequestsPerSecond ? { maxRequestsPerSecond: opts.maxRequestsPerSecond } : {}),
    });

    const policy = opts.onInvalid ?? 'fail';
    const flushEvery = (opts.parquetFlushSeconds ?? DEFAULTS.parquetFlushSeconds) * 1000;
    const flushed = { inserted: 0, updated: 0 };
    if (flushEvery > 0) {
      flushTimer = setInterval(() => {
        store.flush().then(
          (r) => {
            r.partitions.forEach((x) => partitionsWritten.add(x));
            flushed.inserted += r.inserted;
            flushed.updated += r.updated;
          },
          (err) => logger.warn({ err: String(err) }, 'periodic flush (merge, Parquet rewrite) failed; it is retried at the end of the run'),
        );
      }, flushEvery);
      flushTimer.unref();
    }

    const outcome = await extractWindows({
      client,
      windows,
      controller,
      maxConcurrency,
      ...(opts.maxResultsPerQuery ? { maxResultsPerQuery: opts.maxResultsPerQuery } : {}),
      minChunkSeconds: opts.minChunkSeconds ?? DEFAULTS.minChunkSeconds,
      ...(opts.stopSignal ? { stopSignal: opts.stopSignal } : {}),
      ...(opts.abortSignal ? { abortSignal: opts.abortSignal } : {}),
      now,
      stats,
      onLog: (event, fields) => logger.info(fields, event),
      onWindow: async (w, body, fetchedAtMs) => {
        let r: { written: number };
        if (body.kind === 'ndjson') {
          // Every record passed the scanner's checks: DuckDB parses them straight from the body's bytes.
          r = await store.commitWindow({ window: w, ndjson: { bytes: body.ndjson, count: body.count, extractedAt: fetchedAtMs / 1000 }, rejected: [], runId });
        } else {
          // Not in the fast shape: the precise validator decides, record by record.
          const flat = flattenResponse(body.records, fetchedAtMs / 1000, policy);
          r = await store.commitWindow({ window: w, batch: flat.batch, rejected: flat.rejected, runId });
          totals.rejected += flat.rejected.length;
          totals.duplicatesDropped += flat.duplicatesDropped;
          if (flat.rejected.length) logger.warn({ window: describeWindow(w), rejected: flat.rejected.length }, 'records quarantined in rejected_sessions');
        }
        totals.written += r.written;
        publisher.soon();
        opts.onProgress?.({ windowsTotal: windows.length, windowsDone: stats.windowsDone, sessions: totals.written });
      },
    });
    stats.rateLimited = controller.rateLimitedCount;
    if (flushTimer) clearInterval(flushTimer);

    const last = await store.flush();
    last.partitions.forEach((x) => partitionsWritten.add(x));
    totals.inserted = flushed.inserted + last.inserted;
    totals.updated = flushed.updated + last.updated;
    // Sessions stored by this run: new, or replacing a version stored before it (each counted once).
    totals.written = totals.inserted + totals.updated;
    await store.compactCoverage();
    const interrupted = !outcome.error && outcome.skipped.length > 0 && Boolean(opts.stopSignal?.aborted || opts.abortSignal?.aborted);
    const failed = Boolean(outcome.error);
    if (p.backfill && !failed && !interrupted) await store.completeBackfill(p.backfill);

    const coverage = await store.coverage();
    const cp = checkpointOf(coverage);
    const resultOutcome: RunSummary['outcome'] = failed ? 'failed' : interrupted ? 'interrupted' : windows.length ? 'succeeded' : 'nothing-to-do';
    const committedNote = cp !== undefined ? `data up to ${isoOf(cp)} is committed` : 'no window was committed';
    const errorText = outcome.error
      ? redact(
          `${outcome.error.message}; ${committedNote}; ` +
            (needsSettingFixed(outcome.error)
              ? 'running it again will not help until that is fixed (see above)'
              : 'run the same command again to continue'),
        )
      : undefined;
    summary = {
      runId,
      kind,
      outcome: resultOutcome,
      range: p.range ? { from: isoOf(p.range.start), to: isoOf(p.range.end) } : null,
      resumed: p.resumed,
      windows: { total: windows.length, done: stats.windowsDone, skipped: outcome.skipped.length },
      sessions: {
        written: totals.written,
        new: totals.inserted,
        updated: totals.updated,
        rejected: totals.rejected,
        duplicatesDropped: totals.duplicatesDropped,
      },
      requests: stats.requests,
      retries: stats.retries,
      rateLimited: stats.rateLimited,
      pausedMs: Math.round(controller.pausedMs),
      pace: controller.learnedRate,
      bisections: stats.bisections,
      durationMs: now() - startedMs,
      checkpoint: cp !== undefined ? isoOf(cp) : null,
      coverageHoles: holes(coverage).map((h) => ({ from: isoOf(h.start), to: isoOf(h.end) })),
      files: {
        dataDir: opts.dataDir,
        duckdb: format === 'parquet' ? null : store.layout.dbPath,
        parquet: format === 'duckdb' ? null : store.layout.parquetDir,
        partitionsWritten: [...partitionsWritten].sort(),
      },
      ...(errorText ? { error: errorText } : {}),
    };
    await store.recordRun({
      ...baseRow(),
      ended_at: now() / 1000,
      outcome: resultOutcome,
      sessions_new: summary.sessions.new,
      sessions_updated: summary.sessions.updated,
      error: errorText ?? null,
      paused_ms: summary.pausedMs,
      pace: summary.pace,
    });
    if (failed) {
      logger.error({ error: errorText }, `${kind} failed`);
      throw Object.assign(new RunFailedError(`${kind} ${runId} failed: ${errorText}`, runId, { cause: outcome.error }), { summary });
    }
    if (interrupted) {
      throw Object.assign(
        new RunInterruptedError(`${kind} ${runId} stopped: ${summary.windows.skipped} windows not started; ${committedNote}`, opts.stopExitCode ?? 130),
        { summary },
      );
    }
    logger.info({ sessions: totals.written, windows: stats.windowsDone, durationMs: summary.durationMs }, `${kind} finished`);
    return summary;
  } catch (err) {
    if (runRecorded && !summary) {
      await store
        .recordRun({
          run_id: runId, kind, range_from: null, range_to: null, started_at: startedMs / 1000, ended_at: now() / 1000,
          outcome: 'failed', windows: stats.windowsDone, sessions_written: totals.written, sessions_new: null, sessions_updated: null,
          rejected: totals.rejected, requests: stats.requests, retries: stats.retries, rate_limited: stats.rateLimited,
          bisections: stats.bisections, partitions_written: partitionsWritten.size, error: redact(String((err as Error)?.message ?? err)),
        })
        .catch(() => {});
    }
    throw err;
  } finally {
    if (flushTimer) clearInterval(flushTimer);
    // The snapshot readers see once the run has ended (status reads the DuckDB file itself then).
    await publisher.final().catch((err) => logger.warn({ err: String(err) }, 'could not write the state snapshot (state.json)'));
    // A new store whose run failed before committing anything holds nothing worth keeping (a wrong
    // key, say): what this run created goes again. Data of any earlier run is never touched.
    const kept = summary?.outcome === 'succeeded' || summary?.outcome === 'nothing-to-do';
    const discard = !kept && store.created.length > 0 && (await store.coverage().then((c) => c.length === 0, () => false));
    await store.close();
    if (discard) {
      await discardNew(store.created);
      // The snapshot this run published describes a store that is gone.
      await unlink(join(opts.dataDir, STATE_FILE)).catch(() => {});
    }
    await lock?.release();
    if (discard) await removeEmptyDirs(opts.dataDir, dirCreated);
  }
}

/**
 * How long a run keeps trying to open a DuckDB file held by another process without --wait: long
 * enough for a `status` or `sessions` that had it open for a moment, short enough to fail a
 * nightly run at once when a BI tool keeps it open.
 */
const STORE_BUSY_GRACE_MS = 3_000;
const STORE_BUSY_POLL_MS = 500;

/**
 * Opens the store, waiting while another process (a reader: a BI tool, a notebook) holds the DuckDB
 * file: a few seconds without --wait, up to the wait timeout with it. Throws StoreBusyError (exit 3)
 * naming the holder when it is still held.
 */
async function openWhenFree(opts: PipelineOptions, logger: Logger): Promise<SessionStore> {
  const lock = opts.lock || undefined;
  const deadline = Date.now() + (lock?.wait ? (lock.waitTimeoutMs ?? Infinity) : STORE_BUSY_GRACE_MS);
  let told = false;
  for (;;) {
    try {
      return await SessionStore.open({ dataDir: opts.dataDir, format: opts.format, logger });
    } catch (err) {
      if (err instanceof StoreBusyError && opts.stopSignal?.aborted) {
        throw new RunInterruptedError(`stopped while waiting for ${err.holder} to close the DuckDB file; nothing was written`, opts.stopExitCode ?? 130);
      }
      if (!(err instanceof StoreBusyError) || Date.now() >= deadline) {
        if (err instanceof StoreBusyError && lock?.wait) {
          const waited = formatDuration(Math.max(1, Math.round((lock.waitTimeoutMs ?? 0) / 1000)));
          const text =
            `The DuckDB file in ${opts.dataDir} is still held open by ${err.holder}${err.byReader ? ', a reader,' : ''} ` +
            `after waiting ${waited} (--wait-timeout): close that connection, or give a longer --wait-timeout` +
            (err.byReader ? '; point BI tools at the Parquet dataset (parquet/sessions/), which a run never locks' : '');
          throw new StoreBusyError(text, {
            cause: err,
            holder: err.holder,
            byReader: err.byReader,
            ...(err.pid !== undefined ? { pid: err.pid } : {}),
          });
        }
        throw err;
      }
      if (!told && lock?.wait) {
        told = true;
        logger.warn({ holder: err.holder, reader: err.byReader }, 'the DuckDB file is held by another process: waiting for it to close');
        lock.onStoreBusy?.(err);
      }
      await realSleep(STORE_BUSY_POLL_MS, opts.stopSignal).catch(() => {});
    }
  }
}

/** Creates the data directory when missing; returns the first directory it created (see mkdir), if any. */
async function ensureDataDir(dir: string): Promise<string | undefined> {
  try {
    return await mkdir(dir, { recursive: true, mode: DIR_MODE });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new DataDirError(
      `data directory ${dir} cannot be created (${code}): ` +
        (code === 'EACCES' || code === 'EROFS' || code === 'EPERM' ? 'it is not writable; choose another --data-dir' : 'a file stands in the way; choose another --data-dir'),
      { cause: err },
    );
  }
}

/** Removes `dir` and its parents up to `top` (the directories ensureDataDir created), each only if empty. */
async function removeEmptyDirs(dir: string, top: string | undefined): Promise<void> {
  if (top === undefined) return;
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (!(await rmdir(d).then(() => true, () => false))) return;
    if (d === resolve(top) || dirname(d) === d) return;
  }
}
