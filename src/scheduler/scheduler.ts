/**
 * The long-lived scheduler: fires each job on its cron expression (node-cron); a tick while the job's
 * previous run goes is skipped and logged, never queued. Each run opens and closes the DuckDB file,
 * so BI tools can read it between runs.
 */
import cron from 'node-cron';
import { RunInterruptedError } from '../pipeline/errors.js';
import type { RunSummary } from '../pipeline/run.js';
import type { Logger } from '../util/logger.js';
import type { JobContext, JobDefinition, JobSettings } from './job.js';

export interface SchedulerOptions {
  jobs: JobDefinition[];
  settings: JobSettings;
  /** Builds a fresh context for each run (fresh signals, logger with the run's id). */
  context: () => JobContext;
  logger: Logger;
  onRunStart?: (job: string) => void;
  /** Called as a job's run ends; the run counts as running until a returned promise settles (monitoring, notifications). */
  onRunEnd?: (
    job: string,
    result: { summary?: RunSummary; error?: unknown; startedMs: number; endedMs: number; durationMs: number },
  ) => void | Promise<void>;
  /** Called once a run has ended and no other job runs: hands back what it allocated (releaseRunMemory); errors only logged. */
  afterRuns?: () => void | Promise<void>;
}

export interface Scheduler {
  /** Runs every job once now (what --run-now does). */
  runNow(): Promise<void>;
  /** Stops firing; resolves when running jobs have ended. */
  stop(): Promise<void>;
  readonly running: boolean;
  readonly skipped: number;
}

export function startScheduler(opts: SchedulerOptions): Scheduler {
  const inFlight = new Map<string, Promise<void>>();
  let skipped = 0;
  const tasks: Array<{ stop(): unknown; destroy?(): unknown }> = [];

  const fire = (job: JobDefinition, reason: string): Promise<void> => {
    const current = inFlight.get(job.name);
    if (current) {
      skipped++;
      opts.logger.warn({ job: job.name, reason }, 'previous run still going: this tick is skipped');
      return current;
    }
    const p = (async () => {
      opts.logger.info({ job: job.name, reason }, 'job starting');
      const startedMs = Date.now();
      let result: { summary?: RunSummary; error?: unknown };
      opts.onRunStart?.(job.name);
      try {
        const summary = await job.run(opts.context());
        opts.logger.info({ job: job.name, outcome: summary.outcome, sessions: summary.sessions.written }, 'job finished');
        result = { summary };
      } catch (error) {
        if (error instanceof RunInterruptedError) {
          // A stop (SIGINT/SIGTERM) is no failure: what was committed stays, the next run goes on from it.
          opts.logger.warn({ job: job.name, outcome: 'interrupted', detail: `${error.message}; the next run continues from there` }, 'job interrupted');
        } else {
          opts.logger.error({ job: job.name, error: error instanceof Error ? error.message : String(error) }, 'job failed');
        }
        result = { error };
      }
      try {
        const endedMs = Date.now();
        await opts.onRunEnd?.(job.name, { ...result, startedMs, endedMs, durationMs: endedMs - startedMs });
      } catch (error) {
        opts.logger.error({ job: job.name, error: error instanceof Error ? error.message : String(error) }, 'after-run step failed');
      } finally {
        inFlight.delete(job.name);
      }
      if (inFlight.size === 0 && opts.afterRuns) {
        try {
          await opts.afterRuns();
        } catch (error) {
          opts.logger.warn({ job: job.name, error: error instanceof Error ? error.message : String(error) }, 'releasing the run\'s memory failed');
        }
      }
    })();
    inFlight.set(job.name, p);
    return p;
  };

  for (const job of opts.jobs) {
    if (job.enabled && !job.enabled(opts.settings)) {
      opts.logger.info({ job: job.name }, 'job not enabled by the configuration: not scheduled');
      continue;
    }
    const { cron: expr, timezone } = job.schedule(opts.settings);
    if (!cron.validate(expr)) throw new Error(`job ${job.name}: ${JSON.stringify(expr)} is not a valid cron expression`);
    tasks.push(cron.schedule(expr, () => void fire(job, 'schedule'), { timezone, name: job.name }));
    opts.logger.info({ job: job.name, cron: expr, timezone }, 'job scheduled');
  }

  return {
    async runNow() {
      // One after the other: the jobs share the data directory's one-writer lock.
      for (const j of opts.jobs.filter((j) => !j.enabled || j.enabled(opts.settings))) await fire(j, 'run-now');
    },
    async stop() {
      for (const t of tasks) {
        t.stop();
        t.destroy?.();
      }
      await Promise.all([...inFlight.values()]);
    },
    get running() {
      return inFlight.size > 0;
    },
    get skipped() {
      return skipped;
    },
  };
}
