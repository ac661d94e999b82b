/** Exit codes of the `session-etl` command; the README lists them. */
export const ExitCode = {
  ok: 0,
  /** A run started and failed (server, data or write error). */
  runFailed: 1,
  /** Bad flags, configuration or input: nothing was written. */
  usage: 2,
  /** Another writer holds the data directory's lock. */
  locked: 3,
  /** The token service needs a new sign-in (`session-etl auth login`). */
  signInRequired: 4,
  /** Stopped by SIGINT. */
  sigint: 130,
  /** Stopped by SIGTERM. */
  sigterm: 143,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
