/** A progress bar with ETA on a terminal (cli-progress); nothing otherwise (the log lines say enough). */
import cliProgress from 'cli-progress';
import type { Progress } from '../pipeline/run.js';

export function createProgress(enabled: boolean): { update(p: Progress): void; stop(): void } {
  if (!enabled || !process.stderr.isTTY) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: '{bar} {value}/{total} windows | {sessions} sessions | ETA {eta_formatted}',
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(p) {
      if (!started) {
        bar.start(p.windowsTotal, p.windowsDone, { sessions: p.sessions });
        started = true;
      }
      bar.update(p.windowsDone, { sessions: p.sessions });
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
