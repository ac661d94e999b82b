/** `backfill`, `export`, `verify` and `schedule` over many accounts, side by side on their stores (docs/accounts.md). */
import { allAccountsViewSql, writeAllAccountsView } from '../accounts/all-accounts-view.js';
import { bringAccountsIn } from '../accounts/bring-in.js';
import { datasetRoot } from '../accounts/layout.js';
import { legacyFormat } from '../accounts/legacy.js';
import { resolveAccounts, type ResolvedAccount } from '../accounts/resolve.js';
import { parseShard, type Shard } from '../accounts/select.js';
import { byStore, shardCount } from '../accounts/stores.js';
import type { LoadedConfig } from '../config/load.js';
import { notifyRunEnds, runEndOf } from '../monitoring/notify.js';
import { RunFailedError, RunInterruptedError } from '../pipeline/errors.js';
import type { AccountJob, AccountResult, RunSummary } from '../pipeline/run.js';
import type { JobContext, JobDefinition } from '../scheduler/job.js';
import type { Logger } from '../util/logger.js';
import { redact } from '../util/redact.js';
import { ExitCode, exitCodeOf } from './exit-codes.js';
import { createCliLogger } from './logging.js';
import { metricsFileOfShard } from './monitoring-options.js';
import { accountConcurrency, type AccountFlags } from './account-options.js';
import { notifySettings, pipelineOptions, type CommonFlags } from './run-options.js';
import { installStopSignals } from './stop-signals.js';
import { formatSummary } from './summary.js';
import { UsageError } from './usage-error.js';
import { volumeRuleOf } from './volume-options.js';

/** An account whose key could not be read: it fails; the others run. */
export class AccountKeyError extends Error {
  override readonly name = 'AccountKeyError';
  readonly exitCode = ExitCode.runFailed;
}

export type AccountJobOf = (account: ResolvedAccount, opts: ReturnType<typeof pipelineOptions>) => AccountJob;

export type AccountsRunFlags = CommonFlags & AccountFlags & { metricsFile?: string };

export interface AccountOutcome {
  account: string;
  outcome: RunSummary['outcome'] | 'failed' | 'not-started';
  summary: RunSummary | null;
  error: string | null;
  exitCode: number;
}

/** Runs the chosen accounts, prints the summaries, refreshes all-accounts.duckdb; returns the exit code. */
export async function executeAccountsRun(
  command: 'backfill' | 'export' | 'verify',
  loaded: LoadedConfig,
  flags: AccountsRunFlags,
  names: string[],
  jobOf: AccountJobOf,
): Promise<number> {
  const shard = flags.shard !== undefined ? parseShard(flags.shard) : undefined;
  const metricsFile = flags.metricsFile !== undefined ? metricsFileOfShard(flags.metricsFile, shard) : undefined;
  const notify = notifySettings(loaded);
  if (shard && names.length === 0) {
    const configured = Object.keys(loaded.config.accounts ?? {}).length;
    process.stderr.write(
      `note: --shard ${shard.index}/${shard.count} holds none of the ${configured} configured accounts, so there is nothing to do (exit 0). ` +
        'Shards are cut by a hash of the account name (docs/accounts.md); with few accounts some shards are empty. `session-etl accounts list --shards N` shows each account\'s shard.\n',
    );
  }
  const logger = createCliLogger(loaded.config.logLevel);
  const signals = installStopSignals({
    logger,
    stopping: 'stopping: no new accounts or windows; running ones finish and commit (send again to exit at once)',
  });
  const { stop, abort } = signals;
  const t0 = Date.now();
  const results = await runManyAccounts(loaded, names, jobOf, {
    concurrency: accountConcurrency(flags),
    shard,
    waitFlags: flags,
    logger,
    stopSignal: stop.signal,
    abortSignal: abort.signal,
    stopExitCode: () => signals.exitCode,
  }).finally(() => signals.dispose());
  const outcomes = results.map(outcomeOf);
  const root = loaded.config.dataDir;
  // Each account's end: what the notifications and the metrics file say of it.
  const ends = results.map((r, i) => ({
    account: r.account,
    durationMs: r.durationMs,
    ...(outcomes[i]!.summary ? { summary: outcomes[i]!.summary! } : {}),
    ...(r.ok ? {} : { error: r.error }),
  }));
  if (notify) {
    // Every account's notifications at once, under one budget (15 s however many accounts failed).
    const endedMs = Date.now();
    await notifyRunEnds(
      notify,
      ends.map(({ durationMs, ...end }, i) => ({
        end: runEndOf({ ...end, command, dataDir: root, startedMs: endedMs - durationMs, endedMs, exitCode: outcomes[i]!.exitCode }),
        logger: logger.child?.({ account: end.account }) ?? logger,
      })),
      { logger },
    );
  }
  if (metricsFile !== undefined) {
    const { writeAccountsMetrics } = await import('../monitoring/metrics-file.js');
    await writeAccountsMetrics(metricsFile, command, root, ends, {
      ...(shard ? { shard: `${shard.index}/${shard.count}` } : {}),
      volume: volumeRuleOf(loaded.config),
    });
  }
  let view: string | null = null;
  try {
    view = await writeAllAccountsView(root);
  } catch (err) {
    process.stderr.write(`warning: could not write ${root}/all-accounts.duckdb (${redact((err as Error).message)}); the view's SQL: ${allAccountsViewSql(root)}\n`);
  }
  const total = totalOf(outcomes, Date.now() - t0);
  if (flags.json) process.stdout.write(JSON.stringify({ command, accounts: outcomes, total, allAccountsDb: view }) + '\n');
  else process.stdout.write(formatAccounts(outcomes, total));
  const failed = outcomes.filter((r) => r.outcome === 'failed');
  const stopped = outcomes.filter((r) => r.outcome === 'interrupted' || r.outcome === 'not-started');
  if (failed.length) {
    process.stderr.write(
      `error: ${failed.length} of ${outcomes.length} accounts failed: ${failed.map((f) => f.account).join(', ')}\n` +
        failed.map((f) => `  ${f.account}: ${f.error}\n`).join(''),
    );
    // A verify whose only failures are refused removals ends as a single account's does (exit 5).
    return failed.every((f) => f.exitCode === ExitCode.deletesRefused) ? ExitCode.deletesRefused : ExitCode.runFailed;
  }
  if (stopped.length && stop.signal.aborted) {
    process.stderr.write(`stopped: ${stopped.length} accounts interrupted or not started (${stopped.map((s) => s.account).join(', ')}); committed data is kept\n`);
    return signals.exitCode;
  }
  return ExitCode.ok;
}

type AccountResultOf = AccountResult & { account: string };

interface ManyOptions {
  concurrency: number;
  shard?: Shard | undefined;
  waitFlags: { wait?: boolean; waitTimeout?: string };
  logger: Logger;
  stopSignal?: AbortSignal;
  abortSignal?: AbortSignal;
  stopExitCode?: () => number;
}

/**
 * The accounts' runs, in the order named: each store's accounts in one runBatch, after those whose data
 * is elsewhere were moved in (accounts/bring-in.ts). A failure of a store fails its accounts.
 */
async function runManyAccounts(loaded: LoadedConfig, names: string[], jobOf: AccountJobOf, o: ManyOptions): Promise<AccountResultOf[]> {
  const root = loaded.config.dataDir;
  const accounts = new Map(resolveAccounts(loaded, names).map((a) => [a.name, a]));
  // Every account's options are checked before any runs: a bad override is exit 2 for the command.
  const jobs = new Map<string, AccountJob>();
  for (const a of accounts.values()) {
    if (a.keyError) {
      // Nothing to run with, but recorded in the store as the account's failed run (status, health, notifications).
      const template = jobOf(a, { ...placeholderOptions(a), logger: o.logger.child?.({ account: a.name }) ?? o.logger });
      jobs.set(a.name, { ...template, refused: new AccountKeyError(a.keyError) } as AccountJob);
      continue;
    }
    try {
      const opts = pipelineOptions(a.loaded, o.waitFlags);
      jobs.set(a.name, jobOf(a, { ...opts, apiKeySource: keySourceText(a), logger: o.logger.child?.({ account: a.name }) ?? o.logger }));
    } catch (err) {
      throw new UsageError(`account ${a.name}: ${(err as Error).message}`, { cause: err });
    }
  }
  const count = await shardCount(root, o.shard);
  const { runBatch, datasetOf } = await import('../pipeline/run.js');
  const results = new Map<string, AccountResultOf>();
  const anyJob = [...jobs.values()].find((j) => !j.refused) ?? jobs.values().next().value as AccountJob | undefined;
  for (const group of byStore(names, count)) {
    const groupJobs = group.names.flatMap((n) => (jobs.has(n) ? [jobs.get(n)!] : []));
    if (!groupJobs.length) continue;
    const t0 = Date.now();
    try {
      const lock = anyJob?.opts.lock;
      const format = anyJob?.opts.format ?? legacyFormat(root, group.names);
      const batch = await runBatch(
        {
          dataDir: root,
          accounts: 'many',
          ...(anyJob ? datasetOf(anyJob.opts) : {}),
          concurrency: o.concurrency,
          logger: o.logger,
          ...(anyJob?.opts.memoryLimit ? { memoryLimit: anyJob.opts.memoryLimit } : {}),
          ...(group.store ? { shard: group.store } : {}),
          // The format asked for; else, for a store still to be made from the layout before schema 3, that layout's.
          ...(format ? { format } : {}),
          ...(lock !== undefined ? { lock } : {}),
          ...(anyJob?.opts.volumeRule ? { volumeRule: anyJob.opts.volumeRule } : {}),
          ...(o.stopSignal ? { stopSignal: o.stopSignal } : {}),
          ...(o.abortSignal ? { abortSignal: o.abortSignal } : {}),
          get stopExitCode() {
            return o.stopExitCode?.() ?? 130;
          },
          prepare: async (store) => {
            await bringAccountsIn(store, root, group.store, group.names, o.logger);
          },
        },
        groupJobs,
      );
      for (const r of batch) results.set(r.account, r);
    } catch (error) {
      // The store could not be taken (a setting, another run holding it): no account ran; the command
      // ends with that error's own exit code (2, 3). Any other failure of the store fails its accounts.
      const code = exitCodeOf(error);
      if (code === ExitCode.usage || code === ExitCode.locked) throw error;
      for (const j of groupJobs) results.set(j.account, { account: j.account, ok: false, error, durationMs: Date.now() - t0 });
    }
  }
  return names.map((n) => results.get(n) ?? { account: n, ok: false, error: new Error(`account ${n} did not run`), durationMs: 0 });
}

function keySourceText(a: ResolvedAccount): string {
  return a.keySource.kind === 'env'
    ? `account ${a.name}'s key, the environment variable ${a.keySource.name} (its apiKeyEnv)`
    : `account ${a.name}'s key file ${a.keySource.path} (its apiKeyFile)`;
}

/** The options of an account that cannot run (its key could not be read): enough to plan nothing and name it. */
function placeholderOptions(a: ResolvedAccount): ReturnType<typeof pipelineOptions> {
  return { reportingUrl: a.loaded.config.reportingUrl ?? '', apiKey: '', dataDir: a.loaded.config.dataDir };
}

function outcomeOf(r: AccountResultOf): AccountOutcome {
  if (r.ok) return { account: r.account, outcome: r.summary!.outcome, summary: r.summary!, error: null, exitCode: ExitCode.ok };
  const summary = r.summary ?? (r.error as { summary?: RunSummary } | undefined)?.summary ?? null;
  const message = redact(r.error instanceof Error ? r.error.message : String(r.error));
  if ((r.error as Error | undefined)?.name === 'AccountNotStartedError') return { account: r.account, outcome: 'not-started', summary: null, error: message, exitCode: ExitCode.sigint };
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
 * A scheduler job run for every chosen account (`schedule` with accounts), each with its own options,
 * startDate and lookback. Its summary is the total; it fails (naming them) when any account failed.
 */
export function accountsJob(
  job: JobDefinition,
  loaded: LoadedConfig,
  names: string[],
  concurrency: number,
  flags: { wait?: boolean; waitTimeout?: string; shard?: string },
  onAccounts: (outcomes: AccountOutcome[], total: AccountsTotal) => void,
): JobDefinition {
  const accountJob = job.accountJob;
  if (!accountJob) throw new UsageError(`job ${job.name} cannot run with accounts: it does not say what each account's part is (accountJob)`);
  return {
    ...job,
    run: async (ctx) => {
      const t0 = Date.now();
      const { parseDuration, parseInstant } = await import('../time/windows.js');
      const results = await runManyAccounts(
        loaded,
        names,
        (a, opts) => {
          const c = a.loaded.config;
          const since = c.startDate != null ? parseInstant(String(c.startDate), `account ${a.name}: startDate`) : undefined;
          const context: JobContext = {
            pipeline: opts,
            ...(since !== undefined ? { since } : {}),
            lookbackSeconds: parseDuration(c.lookback, 'lookback'),
            verify: { rangeSeconds: parseDuration(c.verifyRange, 'verifyRange'), sample: c.verifySample, repair: c.verifyRepair },
          };
          return { account: a.name, ...accountJob(context) } as AccountJob;
        },
        {
          concurrency,
          shard: flags.shard !== undefined ? parseShard(flags.shard) : undefined,
          waitFlags: flags,
          logger: ctx.pipeline.logger ?? createCliLogger(loaded.config.logLevel),
          ...(ctx.pipeline.stopSignal ? { stopSignal: ctx.pipeline.stopSignal } : {}),
          ...(ctx.pipeline.abortSignal ? { abortSignal: ctx.pipeline.abortSignal } : {}),
        },
      );
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
      repeated: sum((x) => x.sessions.repeated ?? 0),
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
