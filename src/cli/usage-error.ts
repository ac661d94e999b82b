import { ExitCode } from '../errors.js';

/** A bad flag, argument or configuration value: printed with a hint, exits 2, nothing is written. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly exitCode = ExitCode.usage;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** `fn()`, with what it throws (a bad duration, instant…; only what `when` picks) rethrown as a UsageError of the same message. */
export function asUsage<T>(fn: () => T, when: (err: unknown) => boolean = () => true): T {
  const rethrow = (err: unknown): never => {
    throw when(err) ? new UsageError((err as Error).message, { cause: err }) : err;
  };
  try {
    const out = fn();
    return (out instanceof Promise ? out.catch(rethrow) : out) as T;
  } catch (err) {
    return rethrow(err);
  }
}

export function isUsageError(e: unknown): e is UsageError {
  return e instanceof UsageError;
}
