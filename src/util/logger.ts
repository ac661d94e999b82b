/**
 * The logger shape the library uses (pino's). `silentLogger` is the default for library calls;
 * the CLI builds a pino logger whose output passes through `redact()` (see cli/logging.ts).
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child?(bindings: object): Logger;
}

const noop = () => {};
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };
