/** Runs a backfill, export or verify for the CLI: logger, progress, two-stage stop (stop-signals.ts), summary and exit code. */
import { notifyRunEnd, runEndOf, type NotifyDeps, type NotifySettings, type RunEnd } from '../monitoring/notify.js';
import { RunFailedError, RunInterruptedError } from '../pipeline/errors.js';
import type { PipelineOptions, RunSummary } from '../pipeline/run.js';
import { ExitCode, exitCodeOf } from './exit-codes.js';
import { createCliLogger } from './logging.js';
import { installStopSignals } from './stop-signals.js';
import { createProgress, finalProgress } from './progress.js';
import { printSummary } from './summary.js';
import { UsageError } from './usage-error.js';
import { redact } from '../util/redact.js';

export interface ExecuteRunOptions {
  json: boolean;
  progress: boolean;
  logLevel: string;
  /** Grace period after the first signal before running requests are aborted, ms. */
  graceMs?: number;
  /** Post run notifications (docs/monitoring.md "Notifications") as this command. */
  notify?: NotifySettings & { command: string; deps?: NotifyDeps };
  /** Where the summary and the error go (default: the process's stdout and stderr; a test passes its own). */
  output?: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream };
}

/** Runs as below, then (with `o.notify`) posts what the run's end calls for; that never changes the exit code. */
export async function executeRun(
  base: PipelineOptions,
  run: (opts: PipelineOptions) => Promise<RunSummary>,
  o: ExecuteRunOptions,
): Promise<number> {
  const notify = o.notify;
  if (!notify) return executeRunCore(base, run, o);
  const startedMs = Date.now();
  let summary: RunSummary | undefined;
  let failure: unknown;
  const tracked = (opts: PipelineOptions) =>
    run(opts).then(
      (s) => (summary = s),
      (err: unknown) => {
        failure = err;
        throw err;
      },
    );
  const ended = (exitCode: number, error: unknown): RunEnd =>
    runEndOf({ command: notify.command, dataDir: base.dataDir, startedMs, endedMs: Date.now(), exitCode, summary, error });
  const deps = { logger: createCliLogger(o.logLevel), ...notify.deps };
  let code: number;
  try {
    code = await executeRunCore(base, tracked, o);
  } catch (err) {
    await notifyRunEnd(notify, ended(exitCodeOf(err), err), deps);
    throw err;
  }
  await notifyRunEnd(notify, ended(code, failure), deps);
  return code;
}

export { exitCodeOf };

async function executeRunCore(
  base: PipelineOptions,
  run: (opts: PipelineOptions) => Promise<RunSummary>,
  o: ExecuteRunOptions,
): Promise<number> {
  const logger = createCliLogger(o.logLevel);
  const out = o.output ?? { stdout: process.stdout, stderr: process.stderr };
  const progress = createProgress(o.progress && !o.json);
  // A second signal leaves at once: every committed window is durable; nothing partial is visible.
  const signals = installStopSignals({
    logger,
    ...(o.graceMs !== undefined ? { graceMs: o.graceMs } : {}),
    stopping: 'stopping: no new windows; running ones finish and commit (send again to exit at once)',
    beforeExit: () => progress.stop(),
  });
  const { stop, abort } = signals;
  try {
    const summary = await run({
      ...base,
      logger,
      stopSignal: stop.signal,
      abortSignal: abort.signal,
      get stopExitCode() {
        return signals.exitCode;
      },
      onProgress: (p) => progress.update(p),
    });
    progress.stop(finalProgress(summary));
    printSummary(summary, o.json, out.stdout);
    return ExitCode.ok;
  } catch (err) {
    const summary = (err as { summary?: RunSummary }).summary;
    progress.stop(summary ? finalProgress(summary) : undefined);
    if (summary) printSummary(summary, o.json, out.stdout);
    if (err instanceof RunInterruptedError) {
      out.stderr.write(`${redact(err.message)}\n`);
      return signals.exitCode;
    }
    if (err instanceof RunFailedError) {
      out.stderr.write(`error: ${redact(err.message)}\n`);
      // 1, or 2 when a setting must be fixed first (a refused first connection).
      return err.exitCode;
    }
    if (err instanceof RangeError) throw new UsageError(err.message, { cause: err });
    throw err;
  } finally {
    signals.dispose();
  }
}
