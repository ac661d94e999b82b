import { ExitCode } from '../errors.js';
import { describeWindow, type Window } from '../time/windows.js';

/** A window could not be fetched completely: names the window and the last server message. */
export class WindowFailedError extends Error {
  override readonly name = 'WindowFailedError';
  constructor(
    readonly window: Window,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`window ${describeWindow(window)} failed: ${message}`, options);
  }
}

/**
 * The run failed. Wraps the stage error once and says what is left behind and how to continue
 * (dlt's PipelineStepFailed).
 */
export class RunFailedError extends Error {
  override readonly name = 'RunFailedError';
  readonly exitCode: number = ExitCode.runFailed;
  constructor(
    message: string,
    readonly runId: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The run was stopped by a signal; what was complete is committed. */
export class RunInterruptedError extends Error {
  override readonly name = 'RunInterruptedError';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}
