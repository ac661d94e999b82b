/**
 * The two-stage stop of a run (README "Exit codes"): the first SIGINT/SIGTERM stops new work (`stop`) and
 * aborts what runs after `graceMs` (`abort`); a second exits at once with 130/143 (committed windows are durable).
 */
import type { Logger } from '../util/logger.js';
import { ExitCode } from './exit-codes.js';

export interface StopSignals {
  /** Aborted at the first signal: start nothing new. */
  stop: AbortController;
  /** Aborted `graceMs` after the first signal: cut what is still running. */
  abort: AbortController;
  /** 130 or 143, from the signal received (130 until one is). */
  readonly exitCode: number;
  dispose(): void;
}

export function installStopSignals(o: { logger: Logger; graceMs?: number; stopping: string; beforeExit?: () => void }): StopSignals {
  const stop = new AbortController();
  const abort = new AbortController();
  let exitCode: number = ExitCode.sigint;
  let graceTimer: NodeJS.Timeout | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    const code = sig === 'SIGTERM' ? ExitCode.sigterm : ExitCode.sigint;
    if (stop.signal.aborted) {
      o.beforeExit?.();
      process.stderr.write(`${sig} again: exiting now\n`);
      process.exit(code);
    }
    exitCode = code;
    o.logger.warn({ signal: sig }, o.stopping);
    stop.abort(new Error(`stopped by ${sig}`));
    graceTimer = setTimeout(() => abort.abort(new Error(`stopped by ${sig}`)), o.graceMs ?? 10_000);
    graceTimer.unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    stop,
    abort,
    get exitCode() {
      return exitCode;
    },
    dispose() {
      if (graceTimer) clearTimeout(graceTimer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
