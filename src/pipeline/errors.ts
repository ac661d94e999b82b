import { ExitCode } from '../errors.js';
import { describeWindow, type Window } from '../time/windows.js';

/** A window could not be fetched completely: names the window, the attempts made (when the request was retried) and the last server message. */
export class WindowFailedError extends Error {
  override readonly name = 'WindowFailedError';
  constructor(
    readonly window: Window,
    message: string,
    options?: { cause?: unknown },
    /** Attempts made at its last request (said in the message when given). */
    readonly attempts?: number,
  ) {
    super(`window ${describeWindow(window)} failed${attempts !== undefined ? ` after ${attempts} attempt${attempts === 1 ? '' : 's'}` : ''}: ${message}`, options);
  }
}

/** The run failed: wraps the stage error once and says what is left behind and how to continue. */
export class RunFailedError extends Error {
  override readonly name = 'RunFailedError';
  constructor(
    message: string,
    readonly runId: string,
    options?: { cause?: unknown },
    /** 1, or 2 when the cause is a setting (a refused first connection: EndpointUnreachableError). */
    readonly exitCode: number = ExitCode.runFailed,
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
