import { isConfigError } from '../config/errors.js';
import { ExitCode, exitCodeOf } from '../errors.js';
import { isUsageError } from './usage-error.js';
import { redact, redactedCauseChain } from '../util/redact.js';

/** Prints an error for a person (message and cause chain, no stack unless SESSION_ETL_DEBUG) and returns the exit code. */
export function reportFailure(err: unknown, stderr: NodeJS.WritableStream = process.stderr): number {
  if (isUsageError(err) || isConfigError(err)) {
    stderr.write(`error: ${redact(err.message)}\n(run with --help for usage)\n`);
    return ExitCode.usage;
  }
  // Every message of the chain is redacted: a cause may come from a library (undici, DuckDB) that
  // put a header value or a body in its message.
  const lines = redactedCauseChain(err).map((msg, depth) => (depth === 0 ? `error: ${msg}` : `  caused by: ${msg}`));
  if (process.env.SESSION_ETL_DEBUG && err instanceof Error && err.stack) lines.push(redact(err.stack));
  stderr.write(lines.join('\n') + '\n');
  return exitCodeOf(err);
}
