import { isConfigError } from '../config/errors.js';
import { ExitCode, exitCodeOf } from '../errors.js';
import { isUsageError } from './usage-error.js';

/** Prints an error for a person (message and cause chain, no stack unless SESSION_ETL_DEBUG) and returns the exit code. */
export function reportFailure(err: unknown, stderr: NodeJS.WritableStream = process.stderr): number {
  if (isUsageError(err) || isConfigError(err)) {
    stderr.write(`error: ${err.message}\n(run with --help for usage)\n`);
    return ExitCode.usage;
  }
  const lines: string[] = [];
  let cur: unknown = err;
  let depth = 0;
  while (cur && depth < 8) {
    const msg = cur instanceof Error ? cur.message : String(cur);
    lines.push(depth === 0 ? `error: ${msg}` : `  caused by: ${msg}`);
    cur = cur instanceof Error ? cur.cause : undefined;
    depth++;
  }
  if (process.env.SESSION_ETL_DEBUG && err instanceof Error && err.stack) lines.push(err.stack);
  stderr.write(lines.join('\n') + '\n');
  return exitCodeOf(err);
}
