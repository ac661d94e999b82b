import { ExitCode } from '../errors.js';

/**
 * The configuration cannot be used: a file that cannot be read or is not JSON, a value the schema
 * refuses (named with where it came from), or a secret in a file. Exit 2; nothing is written.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly exitCode = ExitCode.usage;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export function isConfigError(e: unknown): e is ConfigError {
  return e instanceof ConfigError;
}
