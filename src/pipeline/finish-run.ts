/** A run's last steps (5 and 6): one last flush, then each account's run recorded and its result (summary or error). */
import { ExitCode } from '../errors.js';
import { EndpointUnreachableError } from '../reporting/errors/endpoint-unreachable-error.js';
import { needsSettingFixed } from '../reporting/errors/reporting-error.js';
import type { SessionStore } from '../store/session-store.js';
import type { VolumeAnomaly } from '../store/volume-anomalies.js';
import { checkpointOf } from '../time/intervals.js';
import { isoOf } from '../time/windows.js';
import { clipText } from '../util/clip-text.js';
import { redact } from '../util/redact.js';
import { oneLine } from '../util/terminal-text.js';
import type { Fetched, Part } from './account-run.js';
import { RunFailedError, RunInterruptedError } from './errors.js';
import type { AccountResult, ResolvedBatch, RunSummary } from './options.js';
import { resumeCommand, targetOf } from './plan.js';
import { differencesError, differencesFound, type VerifySummary } from './verify.js';

/** The last flush and coverage compaction, then each account's backfill bookkeeping, summary and `_runs` row. */
export async function finish(store: SessionStore, parts: Part[], batch: ResolvedBatch): Promise<AccountResult[]> {
  const { now } = batch;
  const last = await store.flush();
  for (const p of parts) p.tally.addLastFlush(last);
  await store.compactCoverage();
  const results: AccountResult[] = [];
  for (const part of parts) {
    const durationMs = now() - part.tally.startedMs;
    const { fetched } = part;
    if (part.error !== undefined || !fetched) {
      const error = part.error ?? new Error('the account did not run');
      if (part.recorded) await store.recordRun(part.tally.failedRow(now() / 1000, errorText(error)));
      results.push({ account: part.job.account, ok: false, error, durationMs });
      continue;
    }
    const summary = (part.summary = await summarise(store, part, fetched, batch));
    const error = differencesFound(summary) ?? endError(store, part, fetched, summary);
    if (!error) {
      part.logger.info({ sessions: part.tally.totals.written, windows: part.tally.stats.windowsDone, durationMs: summary.durationMs }, `${part.job.kind} finished`);
    }
    results.push({ account: part.job.account, ok: !error, ...(error ? { error } : {}), summary, durationMs });
  }
  // Read once every account is recorded (a verify's days included); the summaries (errors' too) gain them.
  const anomalies = await volumeAnomaliesAfter(store, batch, parts);
  for (const p of parts) {
    const found = anomalies.get(p.job.account);
    if (p.summary && found) p.summary.volumeAnomalies = found;
  }
  return results;
}

/** The error a failed (RunFailedError) or stopped (RunInterruptedError) account's run ends with, carrying its summary. */
function endError(store: SessionStore, part: Part, { outcome, plan }: Fetched, summary: RunSummary): Error | undefined {
  const { kind } = part.job;
  const { runId } = part.tally;
  if (outcome.error) {
    // The error itself is told once, with the summary (the CLI prints it after it; the caller catches it).
    part.logger.error({ checkpoint: summary.checkpoint }, `${kind} failed`);
    return Object.assign(new RunFailedError(`${kind} ${runId} failed: ${summary.error}`, runId, { cause: outcome.error }, settingExitCode(outcome.error)), { summary });
  }
  if (summary.outcome !== 'interrupted') return undefined;
  // A backfill resumes when run again over the same range (its end as clamped here): say how.
  const resume = plan.backfill ? `; to resume it, run \`${resumeCommand(plan.backfill, store, part.job.account)}\`` : '';
  return Object.assign(
    new RunInterruptedError(`${kind} ${runId} stopped: ${summary.windows.skipped} windows not started; ${committedNote(summary.checkpoint)}${resume}`, part.job.opts.stopExitCode()),
    { summary },
  );
}

/** Each account's volume anomalies after the last flush (none when the check is off); a failure to read them is only logged. */
async function volumeAnomaliesAfter(store: SessionStore, batch: ResolvedBatch, parts: readonly Part[]): Promise<Map<string, VolumeAnomaly[]>> {
  if (!(batch.volumeRule.threshold > 0)) return new Map();
  try {
    const found = await store.volumeAnomalies(batch.volumeRule);
    // An account with no coverage yet has none.
    for (const p of parts) if (!found.has(p.job.account)) found.set(p.job.account, []);
    return found;
  } catch (err) {
    batch.logger.warn({ err: String(err) }, 'could not count the sessions per day for the volume-anomaly check');
    return new Map();
  }
}

/** An account's summary after the last flush, recorded as its `_runs` row. */
async function summarise(store: SessionStore, part: Part, { plan: p, outcome, controller }: Fetched, batch: ResolvedBatch): Promise<RunSummary> {
  const { tally, job } = part;
  const { now } = batch;
  const opts = job.opts;
  const stopped = Boolean(opts.stopSignal?.aborted || opts.abortSignal?.aborted || batch.stopSignal?.aborted || batch.abortSignal?.aborted);
  const interrupted = !outcome.error && outcome.skipped.length > 0 && stopped;
  const report = part.verifier && !outcome.error && !interrupted ? await part.verifier.report({ todo: p.todo, sampled: p.sampled ?? null }, now() / 1000) : null;
  const differs = report !== null && !report.equal;
  const failed = Boolean(outcome.error) || differs;
  if (p.backfill && !failed && !interrupted) await store.completeBackfill(job.account, p.backfill);
  const coverage = await store.coverage(job.account);
  const cp = checkpointOf(coverage);
  // The server's part made one printable line and clipped (a hostile server may answer megabytes), the
  // note and advice kept whole. A verify commits no windows: no checkpoint to continue from.
  const error = outcome.error
    ? `${errorText(outcome.error)}; ${job.kind === 'verify' ? 'the verify did not finish comparing' : committedNote(cp !== undefined ? isoOf(cp) : null)}; ` +
      (needsSettingFixed(outcome.error) ? 'running it again will not help until that is fixed' : job.kind === 'verify' ? 'run the same command again' : 'run the same command again to continue')
    : differs && p.range
      ? differencesError(report, p.range, targetOf(store, job.account))
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
  await store.recordRun({ ...tally.row(), ended_at: now() / 1000, outcome: summary.outcome, error: error ?? null, paused_ms: summary.pausedMs, pace: summary.pace });
  const verified: VerifySummary | undefined = job.kind === 'verify' ? { ...summary, kind: 'verify', verify: report } : undefined;
  return verified ?? summary;
}

/** A run's error as its `_runs` row keeps it: one printable line, redacted, clipped. */
export function errorText(err: unknown): string {
  return clipText(oneLine(redact(String((err as Error)?.message ?? err))));
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
