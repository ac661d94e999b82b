import { ExitCode } from '../errors.js';

/** A bad flag, argument or configuration value: printed with a hint, exits 2, nothing is written. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly exitCode = ExitCode.usage;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** `fn()`, with what it throws (a bad duration, instant…) rethrown as a UsageError of the same message. */
export function asUsage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function isUsageError(e: unknown): e is UsageError {
  return e instanceof UsageError;
}
