/** Exit codes of the `session-etl` command: defined with the errors (src/errors.ts); re-exported for the CLI. */
export { ExitCode, exitCodeOf } from '../errors.js';
