import { isConfigError } from '../config/errors.js';
import { ExitCode, exitCodeOf } from '../errors.js';
import { isUsageError } from './usage-error.js';
import { clipText } from '../util/clip-text.js';
import { redact, redactedCauseChain } from '../util/redact.js';
import { printableLines } from '../util/terminal-text.js';

/**
 * Prints an error for a person (message and cause chain, no stack unless SESSION_ETL_DEBUG) and returns the exit code.
 * Each message is redacted, then made printable (a server's text may hold escape sequences that
 * retitle or clear the terminal) and clipped (a server's 2 MB answer is not printed whole).
 */
export function reportFailure(err: unknown, stderr: NodeJS.WritableStream = process.stderr): number {
  if (isUsageError(err) || isConfigError(err)) {
    stderr.write(`error: ${printableLines(redact(err.message))}\n(run with --help for usage)\n`);
    return ExitCode.usage;
  }
  // Every message of the chain is redacted: a cause may come from a library (undici, DuckDB) that
  // put a header value or a body in its message.
  const lines = redactedCauseChain(err).map((msg, depth) => `${depth === 0 ? 'error: ' : '  caused by: '}${printableLines(clipText(msg))}`);
  if (process.env.SESSION_ETL_DEBUG && err instanceof Error && err.stack) lines.push(printableLines(redact(err.stack)));
  stderr.write(lines.join('\n') + '\n');
  return exitCodeOf(err);
}
