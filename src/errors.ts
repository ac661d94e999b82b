/** Exit codes (the README's "Exit codes"): errors carry theirs (`exitCode`) where they are defined; the CLI only prints. */
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
  /** `verify --repair --delete-missing` refused to remove sessions on an answer that looks wrong (or beyond --max-delete). */
  deletesRefused: 5,
  /** Stopped by SIGINT. */
  sigint: 130,
  /** Stopped by SIGTERM. */
  sigterm: 143,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The exit code an error asks for (its `exitCode`), or 1 (run failed) when it names none. */
export function exitCodeOf(err: unknown): number {
  const code = (err as { exitCode?: unknown } | null)?.exitCode;
  return typeof code === 'number' && code > 0 ? code : ExitCode.runFailed;
}
