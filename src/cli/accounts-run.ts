/**
 * `backfill` and `export` over many accounts (docs/accounts.md): the accounts chosen (all, --account,
 * --shard) run side by side in this process (--account-concurrency), each a whole run of its own.
 * Signals are handled once for all of them; the summary has one entry per account and a total; the
 * exit code is 1 when any account failed, and the message names them.
 */
import { allAccountsViewSql, writeAllAccountsView } from '../accounts/all-accounts-view.js';
import { resolveAccounts, type ResolvedAccount } from '../accounts/resolve.js';
import { AccountNotStartedError, runAccounts, type AccountResult } from '../accounts/run-accounts.js';
import { withSharedStore } from '../accounts/shared-store.js';
import type { LoadedConfig } from '../config/load.js';
import { RunFailedError, RunInterruptedError } from '../pipeline/errors.js';
import type { JobDefinition } from '../scheduler/job.js';
import { parseDuration, parseInstant } from '../time/windows.js';
import { datasetRoot } from '../accounts/layout.js';
import type { PipelineOptions, RunSummary } from '../pipeline/run.js';
import { redact } from '../util/redact.js';
import { ExitCode, exitCodeOf } from './exit-codes.js';
import { createCliLogger } from './logging.js';
import { checkMetricsFile } from './monitoring-options.js';
import { notifyRunEnd, runEndOf, type NotifySettings } from '../monitoring/notify.js';
import { pipelineOptions } from './run-options.js';
import { formatSummary } from './summary.js';
import { installStopSignals } from './stop-signals.js';
import { UsageError } from './usage-error.js';

/** An account whose key could not be read: it fails; the others run. */
export class AccountKeyError extends Error {
  override readonly name = 'AccountKeyError';
  readonly exitCode = ExitCode.runFailed;
}

export interface AccountsRunOptions {
  command: 'backfill' | 'export';
  json: boolean;
  logLevel: string;
  waitFlags: { wait?: boolean; waitTimeout?: string };
  concurrency: number;
  /** Grace period after the first signal before running requests are aborted, ms. */
  graceMs?: number;
  /** --metrics-file: written after every account has ended (counters with an account label). */
  metricsFile?: string | undefined;
  /** notifyUrl: each account's run end is judged on its own (its own failing/recovered state, in its directory). */
  notify?: NotifySettings | undefined;
}

export interface AccountOutcome {
  account: string;
  outcome: RunSummary['outcome'] | 'failed' | 'not-started';
  summary: RunSummary | null;
  error: string | null;
  exitCode: number;
}

/**
 * Runs `run` for each account (PipelineOptions built from its own configuration), prints the
 * summaries, refreshes all-accounts.duckdb, and returns the exit code.
 */
export async function executeAccountsRun(
  loaded: LoadedConfig,
  names: string[],
  run: (account: ResolvedAccount, opts: PipelineOptions) => Promise<RunSummary>,
  o: AccountsRunOptions,
): Promise<number> {
  if (o.metricsFile !== undefined) checkMetricsFile(o.metricsFile);
  const accounts = new Map(resolveAccounts(loaded, names).map((a) => [a.name, a]));
  // Every account's options are checked before any runs: a bad override is exit 2 for the command.
  const bases = new Map<string, PipelineOptions>();
  for (const a of accounts.values()) {
    if (a.keyError) continue;
    try {
      bases.set(a.name, { ...pipelineOptions(a.loaded, o.waitFlags), parquetDir: a.parquetDir });
    } catch (err) {
      throw new UsageError(`account ${a.name}: ${(err as Error).message}`, { cause: err });
    }
  }
  const logger = createCliLogger(o.logLevel);
  const signals = installStopSignals({
    logger,
    ...(o.graceMs !== undefined ? { graceMs: o.graceMs } : {}),
    stopping: 'stopping: no new accounts or windows; running ones finish and commit (send again to exit at once)',
  });
  const { stop, abort } = signals;
  const t0 = Date.now();
  let results: Array<AccountResult<RunSummary>>;
  try {
    results = await withSharedStore(o.concurrency, () => runAccounts(
      names,
      o.concurrency,
      async (name) => {
        const a = accounts.get(name)!;
        if (a.keyError) throw new AccountKeyError(a.keyError);
        const child = logger.child?.({ account: name }) ?? logger;
        return run(a, {
          ...bases.get(name)!,
          logger: child,
          stopSignal: stop.signal,
          abortSignal: abort.signal,
          get stopExitCode() {
            return signals.exitCode;
          },
        });
      },
      { stopSignal: stop.signal },
    ));
  } finally {
    signals.dispose();
  }
  const outcomes = results.map(outcomeOf);
  if (o.notify) {
    const endedMs = Date.now();
    for (const [i, r] of results.entries()) {
      const end = runEndOf({
        command: o.command,
        dataDir: accounts.get(r.account)!.loaded.config.dataDir,
        startedMs: endedMs - r.durationMs,
        endedMs,
        exitCode: outcomes[i]!.exitCode,
        ...(outcomes[i]!.summary ? { summary: outcomes[i]!.summary! } : {}),
        ...(r.ok ? {} : { error: r.error }),
      });
      await notifyRunEnd(o.notify, end, { logger: logger.child?.({ account: r.account }) ?? logger });
    }
  }
  if (o.metricsFile !== undefined) {
    const { writeAccountsMetrics } = await import('../monitoring/metrics-file.js');
    await writeAccountsMetrics(
      o.metricsFile,
      o.command,
      results.map((r, i) => ({
        account: r.account,
        dataDir: accounts.get(r.account)!.loaded.config.dataDir,
        durationMs: r.durationMs,
        ...(outcomes[i]!.summary ? { summary: outcomes[i]!.summary! } : {}),
        ...(r.ok ? {} : { error: r.error }),
      })),
    );
  }
  let view: string | null = null;
  try {
    view = await writeAllAccountsView(loaded.config.dataDir);
  } catch (err) {
    process.stderr.write(`warning: could not write ${loaded.config.dataDir}/all-accounts.duckdb (${redact((err as Error).message)}); the view's SQL: ${allAccountsViewSql(loaded.config.dataDir)}\n`);
  }
  const total = totalOf(outcomes, Date.now() - t0);
  if (o.json) process.stdout.write(JSON.stringify({ command: o.command, accounts: outcomes, total, allAccountsDb: view }) + '\n');
  else process.stdout.write(formatAccounts(outcomes, total));
  const failed = outcomes.filter((r) => r.outcome === 'failed');
  const stopped = outcomes.filter((r) => r.outcome === 'interrupted' || r.outcome === 'not-started');
  if (failed.length) {
    process.stderr.write(
      `error: ${failed.length} of ${outcomes.length} accounts failed: ${failed.map((f) => f.account).join(', ')}\n` +
        failed.map((f) => `  ${f.account}: ${f.error}\n`).join(''),
    );
    return ExitCode.runFailed;
  }
  if (stopped.length && stop.signal.aborted) {
    process.stderr.write(`stopped: ${stopped.length} accounts interrupted or not started (${stopped.map((s) => s.account).join(', ')}); committed data is kept\n`);
    return signals.exitCode;
  }
  return ExitCode.ok;
}

function outcomeOf(r: AccountResult<RunSummary>): AccountOutcome {
  if (r.ok) return { account: r.account, outcome: r.value!.outcome, summary: r.value!, error: null, exitCode: ExitCode.ok };
  const summary = (r.error as { summary?: RunSummary } | undefined)?.summary ?? null;
  const message = redact(r.error instanceof Error ? r.error.message : String(r.error));
  if (r.error instanceof AccountNotStartedError) return { account: r.account, outcome: 'not-started', summary: null, error: message, exitCode: ExitCode.sigint };
  if (r.error instanceof RunInterruptedError) return { account: r.account, outcome: 'interrupted', summary, error: message, exitCode: r.error.exitCode };
  return { account: r.account, outcome: 'failed', summary, error: message, exitCode: exitCodeOf(r.error) };
}

export interface AccountsTotal {
  accounts: number;
  succeeded: number;
  failed: number;
  interrupted: number;
  sessionsWritten: number;
  requests: number;
  rateLimited: number;
  durationMs: number;
  failedAccounts: string[];
}

function totalOf(outcomes: AccountOutcome[], durationMs: number): AccountsTotal {
  const sum = (f: (s: RunSummary) => number) => outcomes.reduce((n, o) => n + (o.summary ? f(o.summary) : 0), 0);
  return {
    accounts: outcomes.length,
    succeeded: outcomes.filter((o) => o.outcome === 'succeeded' || o.outcome === 'nothing-to-do').length,
    failed: outcomes.filter((o) => o.outcome === 'failed').length,
    interrupted: outcomes.filter((o) => o.outcome === 'interrupted' || o.outcome === 'not-started').length,
    sessionsWritten: sum((s) => s.sessions.written),
    requests: sum((s) => s.requests),
    rateLimited: sum((s) => s.rateLimited),
    durationMs,
    failedAccounts: outcomes.filter((o) => o.outcome === 'failed').map((o) => o.account),
  };
}

function formatAccounts(outcomes: AccountOutcome[], t: AccountsTotal): string {
  const parts = outcomes.map((o) => {
    const head = `account ${o.account}: ${o.outcome}`;
    if (o.summary) return `${head}\n${formatSummary(o.summary).replace(/^/gm, '  ').trimEnd()}\n`;
    // A failed account's error is listed once, on stderr at the end.
    return `${head}${o.error && o.outcome !== 'failed' ? `\n  error          ${o.error}` : ''}\n`;
  });
  const rate = t.durationMs > 0 ? Math.round(t.sessionsWritten / (t.durationMs / 1000)) : 0;
  parts.push(
    `total: ${t.accounts} accounts, ${t.succeeded} succeeded, ${t.failed} failed${t.interrupted ? `, ${t.interrupted} interrupted` : ''}; ` +
      `${t.sessionsWritten} sessions written, ${t.requests} requests, ${t.rateLimited} rate-limited, ${(t.durationMs / 1000).toFixed(1)} s (${rate} sessions/s)` +
      (t.failed ? `\nfailed accounts: ${t.failedAccounts.join(', ')}` : '') +
      '\n',
  );
  return parts.join('');
}

/**
 * A scheduler job run once per chosen account (`schedule` with accounts): each account's run gets
 * its own pipeline options, `since` (its startDate) and lookback; they run side by side as in
 * `export`. The job's summary is the total; it fails (naming the accounts) when any account failed.
 * The per-account entries go to `onAccounts` (printed by `schedule`).
 */
export function accountsJob(
  job: JobDefinition,
  loaded: LoadedConfig,
  names: string[],
  concurrency: number,
  waitFlags: { wait?: boolean; waitTimeout?: string },
  onAccounts: (outcomes: AccountOutcome[], total: AccountsTotal) => void,
): JobDefinition {
  return {
    ...job,
    run: async (ctx) => {
      const t0 = Date.now();
      const accounts = new Map(resolveAccounts(loaded, names).map((a) => [a.name, a]));
      const results = await withSharedStore(concurrency, () => runAccounts(
        names,
        concurrency,
        async (name) => {
          const a = accounts.get(name)!;
          if (a.keyError) throw new AccountKeyError(a.keyError);
          const c = a.loaded.config;
          const since = c.startDate != null ? parseInstant(String(c.startDate), `account ${name}: startDate`) : undefined;
          return job.run({
            pipeline: {
              ...pipelineOptions(a.loaded, waitFlags),
              parquetDir: a.parquetDir,
              ...(ctx.pipeline.logger ? { logger: ctx.pipeline.logger.child?.({ account: name }) ?? ctx.pipeline.logger } : {}),
              ...(ctx.pipeline.stopSignal ? { stopSignal: ctx.pipeline.stopSignal } : {}),
              ...(ctx.pipeline.abortSignal ? { abortSignal: ctx.pipeline.abortSignal } : {}),
            },
            ...(since !== undefined ? { since } : {}),
            lookbackSeconds: parseDuration(c.lookback, 'lookback'),
          });
        },
        ctx.pipeline.stopSignal ? { stopSignal: ctx.pipeline.stopSignal } : {},
      ));
      const outcomes = results.map(outcomeOf);
      await writeAllAccountsView(loaded.config.dataDir).catch(() => null);
      const total = totalOf(outcomes, Date.now() - t0);
      onAccounts(outcomes, total);
      const summary = combinedSummary(outcomes, total, loaded.config.dataDir, t0);
      if (total.failed) {
        throw Object.assign(new RunFailedError(`${total.failed} of ${total.accounts} accounts failed: ${total.failedAccounts.join(', ')}`, summary.runId), { summary });
      }
      return summary;
    },
  };
}

/** One RunSummary standing for all accounts of a scheduled run (the monitor and notifications take one). */
function combinedSummary(outcomes: AccountOutcome[], t: AccountsTotal, root: string, startedMs: number): RunSummary {
  const s = outcomes.flatMap((o) => (o.summary ? [o.summary] : []));
  const sum = (f: (x: RunSummary) => number) => s.reduce((n, x) => n + f(x), 0);
  const checkpoints = s.map((x) => x.checkpoint).filter((c): c is string => c !== null).sort();
  return {
    runId: `${s[0]?.kind ?? 'export'}-accounts-${new Date(startedMs).toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}`,
    kind: s[0]?.kind ?? 'export',
    outcome: t.failed ? 'failed' : t.interrupted ? 'interrupted' : sum((x) => x.windows.total) ? 'succeeded' : 'nothing-to-do',
    range: null,
    resumed: false,
    windows: { total: sum((x) => x.windows.total), done: sum((x) => x.windows.done), skipped: sum((x) => x.windows.skipped) },
    sessions: {
      written: t.sessionsWritten,
      new: sum((x) => x.sessions.new ?? 0),
      updated: sum((x) => x.sessions.updated ?? 0),
      unchanged: sum((x) => x.sessions.unchanged ?? 0),
      fetched: sum((x) => x.sessions.fetched ?? 0),
      rejected: sum((x) => x.sessions.rejected),
      duplicatesDropped: sum((x) => x.sessions.duplicatesDropped),
    },
    requests: t.requests,
    retries: sum((x) => x.retries),
    rateLimited: t.rateLimited,
    pausedMs: sum((x) => x.pausedMs),
    pace: null,
    bisections: sum((x) => x.bisections),
    durationMs: t.durationMs,
    // The oldest account's: everything before it is stored for every account that has data.
    checkpoint: checkpoints[0] ?? null,
    coverageHoles: s.flatMap((x) => x.coverageHoles),
    files: { dataDir: root, duckdb: null, parquet: datasetRoot(root), partitionsWritten: [] },
    ...(t.failed ? { error: `${t.failed} of ${t.accounts} accounts failed: ${t.failedAccounts.join(', ')}` } : {}),
  };
}
