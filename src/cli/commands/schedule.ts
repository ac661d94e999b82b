import { Command } from 'commander';
import { parseDuration, parseInstant } from '../../time/windows.js';
import { ExitCode } from '../exit-codes.js';
import { createCliLogger } from '../logging.js';
import { addCommonOptions, configFromFlags, pipelineOptions, type CommonFlags } from '../run-options.js';
import { formatSummary } from '../summary.js';
import { UsageError } from '../usage-error.js';

interface ScheduleFlags extends CommonFlags {
  cron?: string;
  timezone?: string;
  runNow?: boolean;
  jobsDir?: string;
}

export function register(program: Command): void {
  addCommonOptions(
    program
      .command('schedule')
      .description('Run in the foreground and fire the jobs in jobs/ on their cron schedule (default: nightly export at 02:00 UTC)')
      .option('--cron <expr>', 'cron expression of the nightly export (config scheduleCron; seconds field allowed)')
      .option('--timezone <tz>', 'time zone of the cron expression (config scheduleTimezone, default UTC)')
      .option('--run-now', 'also run every job once at start')
      .option('--jobs-dir <dir>', 'where the job files are (default: the jobs/ of this installation)'),
  ).action(async (flags: ScheduleFlags) => {
    const loaded = configFromFlags(flags, { scheduleCron: flags.cron, scheduleTimezone: flags.timezone });
    const base = pipelineOptions(loaded, flags);
    const c = loaded.config;
    const since = c.startDate != null ? parseInstant(String(c.startDate), 'startDate') : undefined;
    const lookbackSeconds = parseDuration(c.lookback);
    const logger = createCliLogger(c.logLevel);
    const { loadJobs } = await import('../../scheduler/load-jobs.js');
    const { startScheduler } = await import('../../scheduler/scheduler.js');
    const jobs = await loadJobs(flags.jobsDir);
    if (!jobs.length) throw new UsageError(`no job files in ${flags.jobsDir ?? 'jobs/'}`);

    let stop = new AbortController();
    let abort = new AbortController();
    let exitCode: number = ExitCode.ok;
    const scheduler = startScheduler({
      jobs,
      settings: { cron: c.scheduleCron, timezone: c.scheduleTimezone },
      logger,
      context: () => {
        stop = new AbortController();
        abort = new AbortController();
        return {
          pipeline: { ...base, logger, stopSignal: stop.signal, abortSignal: abort.signal },
          ...(since !== undefined ? { since } : {}),
          lookbackSeconds,
        };
      },
      onRunEnd: (_job, r) => {
        if (r.summary && flags.json) process.stdout.write(JSON.stringify(r.summary) + '\n');
        else if (r.summary) process.stdout.write(formatSummary(r.summary));
        const s = (r.error as { summary?: unknown } | undefined)?.summary;
        if (s && flags.json) process.stdout.write(JSON.stringify(s) + '\n');
      },
    });
    process.stderr.write(`scheduler running: ${jobs.map((j) => j.name).join(', ')} at "${c.scheduleCron}" (${c.scheduleTimezone}); Ctrl-C to stop\n`);

    await new Promise<void>((resolve) => {
      let signalled = false;
      const onSignal = (sig: NodeJS.Signals) => {
        const code = sig === 'SIGTERM' ? ExitCode.sigterm : ExitCode.sigint;
        if (signalled) {
          process.stderr.write(`${sig} again: exiting now\n`);
          process.exit(code);
        }
        signalled = true;
        // Idle: a clean exit. Running: stop it (windows in flight commit), then exit with the signal's code.
        if (scheduler.running) exitCode = code;
        logger.warn({ signal: sig, running: scheduler.running }, 'scheduler stopping');
        stop.abort(new Error(`stopped by ${sig}`));
        setTimeout(() => abort.abort(new Error(`stopped by ${sig}`)), 10_000).unref();
        void scheduler.stop().then(resolve);
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      if (flags.runNow) void scheduler.runNow();
    });
    process.exitCode = exitCode;
  });
}
