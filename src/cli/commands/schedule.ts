import { Command } from 'commander';
import { notifyRunEnd, notifyRunEnds, runEndOf } from '../../monitoring/notify.js';
import type { RunSummary } from '../../pipeline/run.js';
import { parseDuration, parseInstant } from '../../time/windows.js';
import { ExitCode } from '../exit-codes.js';
import { createCliLogger } from '../logging.js';
import { exitCodeOf } from '../execute-run.js';
import { parseHttpPort, warnIfMaxLagBelowSettle } from '../monitoring-options.js';
import { addCommonOptions, configFromFlags, notifySettings, pipelineOptions, type CommonFlags } from '../run-options.js';
import { formatSummary } from '../summary.js';
import { volumeRuleOf } from '../volume-options.js';
import { asUsage, UsageError } from '../usage-error.js';
import { accountConcurrency, addAccountOptions, chosenAccounts, type AccountFlags } from '../account-options.js';
import type { LoadedConfig } from '../../config/load.js';
import { holdsStore } from '../../store/layout.js';
import type { AccountOutcome } from '../accounts-run.js';
import type { SchedulerMonitorOptions } from '../../monitoring/scheduler-monitor.js';

interface ScheduleFlags extends CommonFlags, AccountFlags {
  cron?: string;
  timezone?: string;
  runNow?: boolean;
  jobsDir?: string;
  httpPort?: string;
  httpHost: string;
}

export function register(program: Command): void {
  addAccountOptions(addCommonOptions(
    program
      .command('schedule')
      .description('Run in the foreground and fire the jobs in jobs/ on their cron schedule (default: nightly export at 02:00 UTC)')
      .option('--cron <expr>', 'cron expression of the nightly export (config scheduleCron; seconds field allowed)')
      .option('--timezone <tz>', 'time zone of the cron expression (config scheduleTimezone, default UTC)')
      .option('--run-now', 'also run every job once at start')
      .option('--jobs-dir <dir>', 'where the job files are (default: the jobs/ of this installation)')
      .option('--http-port <port>', 'serve Prometheus /metrics and /healthz on this port while running (0: a free port)')
      .option('--http-host <host>', 'address of the metrics endpoint', '127.0.0.1'),
  )).action(async (flags: ScheduleFlags) => {
    const loaded = configFromFlags(flags, { scheduleCron: flags.cron, scheduleTimezone: flags.timezone });
    // With accounts, each job runs once per chosen account (its own options); `base` only names the data directory.
    const accounts = chosenAccounts(loaded, flags);
    // No accounts map on a data directory of many accounts: refused at start (exit 2), as each export would be.
    if (!accounts) {
      const { datasetOf } = await import('../../pipeline/run.js');
      const { dataset } = datasetOf({ ...(loaded.config.parquetUrl ? { parquetUrl: loaded.config.parquetUrl } : {}), s3PathStyle: loaded.config.s3PathStyle });
      await (await import('../../accounts/stores.js')).refuseHeldAccounts(loaded.config.dataDir, null, dataset);
    }
    const concurrency = accounts ? accountConcurrency(flags) : 0;
    const base = accounts ? { reportingUrl: '', apiKey: '', dataDir: loaded.config.dataDir } : pipelineOptions(loaded, flags);
    const c = loaded.config;
    const since = c.startDate != null ? parseInstant(String(c.startDate), 'startDate') : undefined;
    const lookbackSeconds = parseDuration(c.lookback);
    const logger = createCliLogger(c.logLevel);
    const { loadJobs } = await import('../../scheduler/load-jobs.js');
    const { startScheduler } = await import('../../scheduler/scheduler.js');
    const { releaseRunMemory } = await import('../../util/release-memory.js');
    const settings = { cron: c.scheduleCron, timezone: c.scheduleTimezone, verifyCron: c.verifyCron };
    const verify = { rangeSeconds: parseDuration(c.verifyRange, 'verifyRange'), sample: c.verifySample, repair: c.verifyRepair };
    // A job the configuration does not enable (the weekly verify without verifyCron) is left out.
    const loadedJobs = (await loadJobs(flags.jobsDir)).filter((j) => !j.enabled || j.enabled(settings));
    const accountsJob = accounts ? (await import('../accounts-run.js')).accountsJob : undefined;
    // Each account's part of the run that just ended (with accounts): the monitor and notifications take them one by one.
    let accountParts: AccountOutcome[] | undefined;
    const jobs = accounts && accountsJob
      ? loadedJobs.map((j) =>
          accountsJob(j, loaded, accounts, concurrency, flags, (outcomes, total) => {
            accountParts = outcomes;
            if (flags.json) process.stdout.write(JSON.stringify({ job: j.name, accounts: outcomes, total }) + '\n');
            else for (const o of outcomes) process.stdout.write(`account ${o.account}: ${o.outcome}${o.error ? ` (${o.error})` : ''}\n`);
          }),
        )
      : loadedJobs;
    if (!jobs.length) throw new UsageError(`no job files in ${flags.jobsDir ?? 'jobs/'}`);
    if (jobs.some((j) => j.needsStartDate)) await refuseWithoutStart(loaded, accounts, since !== undefined);
    const httpPort = flags.httpPort !== undefined ? parseHttpPort(flags.httpPort) : undefined;
    // --max-lag (config maxLag): /healthz's lag limit, and the lag alert of notifications.
    const maxLagSeconds = parseDuration(c.maxLag, 'maxLag');
    // (With notifications, notifySettings warns; once is enough.)
    if (!c.notifyUrl) warnIfMaxLagBelowSettle(maxLagSeconds, c.settle);
    const monitor =
      httpPort === undefined
        ? undefined
        : await startMonitor({
            host: flags.httpHost,
            port: httpPort,
            maxLagSeconds,
            dataDir: base.dataDir,
            logger,
            volume: volumeRuleOf(c),
            commands: jobs.some((j) => j.name === 'weekly-verify') ? ['export', 'verify'] : ['export'],
            ...(accounts ? { accounts } : {}),
          });

    const notify = notifySettings(loaded);
    let stop = new AbortController();
    let abort = new AbortController();
    const scheduler = startScheduler({
      jobs,
      settings,
      logger,
      context: () => {
        stop = new AbortController();
        abort = new AbortController();
        return {
          pipeline: { ...base, logger, stopSignal: stop.signal, abortSignal: abort.signal },
          ...(since !== undefined ? { since } : {}),
          lookbackSeconds,
          verify,
        };
      },
      // Between runs, back to the idle size: the run's garbage collected and the allocator trimmed.
      afterRuns: releaseRunMemory,
      onRunStart: (job: string) => {
        accountParts = undefined;
        monitor?.onRunStart(job);
      },
      onRunEnd: async (job, r) => {
        const parts = accountParts?.map((a) => ({
          account: a.account,
          durationMs: a.summary?.durationMs ?? r.durationMs,
          ...(a.summary ? { summary: a.summary } : {}),
          ...(a.error !== null ? { error: a.error } : {}),
          exitCode: a.exitCode,
        }));
        await monitor?.onRunEnd(job, r, parts);
        // A failed or interrupted run's summary (its error carries it) is printed as a finished one's.
        const s = r.summary ?? (r.error as { summary?: RunSummary } | undefined)?.summary;
        if (s) process.stdout.write(flags.json ? JSON.stringify(s) + '\n' : formatSummary(s));
        if (!notify) return;
        // A stop (SIGINT/SIGTERM) lets the posts in flight go on for the grace period, then aborts them.
        const stopSignal = abort.signal;
        // With accounts, each account's run end is judged on its own (as export's are), all posted under one budget.
        if (parts && accounts) {
          const dataDir = loaded.config.dataDir;
          await notifyRunEnds(
            notify,
            parts.map((p) => ({
              end: runEndOf({ command: 'schedule', job, dataDir, account: p.account, exitCode: p.exitCode, startedMs: r.endedMs - p.durationMs, endedMs: r.endedMs, ...(p.summary ? { summary: p.summary } : {}), ...(p.error !== undefined ? { error: p.error } : {}) }),
              logger: logger.child?.({ account: p.account }) ?? logger,
            })),
            { logger, stopSignal },
          );
        } else {
          const exitCode = r.error === undefined ? ExitCode.ok : exitCodeOf(r.error);
          await notifyRunEnd(notify, runEndOf({ command: 'schedule', job, dataDir: base.dataDir, exitCode, ...r }), { logger, stopSignal });
        }
      },
    });
    // In place before anything says the scheduler is up: a signal sent at once is a clean stop, never a kill.
    let signalled = false;
    const stopped = new Promise<void>((resolve) => {
      const onSignal = (sig: NodeJS.Signals) => {
        const code = sig === 'SIGTERM' ? ExitCode.sigterm : ExitCode.sigint;
        if (signalled) {
          process.stderr.write(`${sig} again: exiting now\n`);
          process.exit(code);
        }
        signalled = true;
        // A clean stop exits 0, also with a run going (the next start continues it): 130/143 would read as a
        // failure to systemd. Only a second signal, which does not wait, exits with the signal's code.
        logger.warn({ signal: sig, running: scheduler.running }, 'scheduler stopping');
        stop.abort(new Error(`stopped by ${sig}`));
        setTimeout(() => abort.abort(new Error(`stopped by ${sig}`)), 10_000).unref();
        void scheduler.stop().then(() => monitor?.close()).then(resolve);
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
    process.stderr.write(`scheduler running: ${jobs.map((j) => j.name).join(', ')} at "${c.scheduleCron}" (${c.scheduleTimezone}); Ctrl-C to stop\n`);
    // When each job runs next, in its time zone and in UTC: a person checks the cron said what they meant.
    const { nextScheduledRun } = await import('../../dashboard/next-run.js');
    for (const j of jobs) {
      const { cron: expr, timezone } = j.schedule(settings);
      const next = nextScheduledRun(expr, timezone, Date.now());
      if (next) process.stderr.write(`  ${j.name} runs next at ${wallClock(next.at, timezone)} ${timezone} (${next.at.replace('.000Z', 'Z')})\n`);
    }
    if (monitor) process.stdout.write(`Metrics: ${monitor.url}/metrics  (health: ${monitor.url}/healthz)\n`);
    if (flags.runNow && !signalled) void scheduler.runNow();
    await stopped;
    process.exitCode = ExitCode.ok;
  });
}

/** Refuses (exit 2) a scheduler whose nightly export would fail every night: nothing stored and no startDate. */
async function refuseWithoutStart(loaded: LoadedConfig, accounts: string[] | null, hasStartDate: boolean): Promise<void> {
  const advice =
    'set startDate in the configuration file (where the first export starts, e.g. "startDate": "2026-01-01"), ' +
    'or load the history first with `session-etl backfill --from … --to …`';
  // With the state in a bucket, a run brings it from there: what is stored is not known here.
  if (loaded.config.parquetUrl) return;
  if (!accounts) {
    if (hasStartDate || holdsStore(loaded.config.dataDir)) return;
    throw new UsageError(`nothing has been exported to ${loaded.config.dataDir} yet and no startDate is set, so the nightly export would fail every night: ${advice}`);
  }
  const withoutStart = accounts.filter((name) => (loaded.config.accounts?.[name]?.startDate ?? loaded.config.startDate) == null);
  if (!withoutStart.length) return;
  const { readAccountsMonitoredStates } = await import('../../monitoring/read-state.js');
  const states = await readAccountsMonitoredStates(loaded.config.dataDir, withoutStart);
  const missing = withoutStart.filter((name) => states.get(name)?.checkpoint == null);
  if (missing.length) {
    throw new UsageError(
      `nothing has been exported yet for account${missing.length > 1 ? 's' : ''} ${missing.join(', ')} and no startDate is set for ${missing.length > 1 ? 'them' : 'it'}, ` +
        `so the nightly export would fail for ${missing.length > 1 ? 'them' : 'it'} every night: ${advice} (or the account's own startDate)`,
    );
  }
}

async function startMonitor(o: SchedulerMonitorOptions) {
  const { startSchedulerMonitor } = await import('../../monitoring/scheduler-monitor.js');
  const { MonitoringServerError } = await import('../../monitoring/http-server.js');
  return asUsage(() => startSchedulerMonitor(o), (err) => err instanceof MonitoringServerError);
}

/** "2026-11-29 02:00" in `timezone`: an instant as a clock on that zone's wall reads it. */
function wallClock(iso: string, timezone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23',
  }).formatToParts(new Date(iso));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')}`;
}
