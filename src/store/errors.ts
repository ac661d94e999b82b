import { ExitCode } from '../errors.js';

/** The data directory cannot be used: not writable, or it holds files of another program. Exit 2; nothing written. */
export class DataDirError extends Error {
  override readonly name = 'DataDirError';
  readonly exitCode = ExitCode.usage;
}

/** A write to the store failed (disk full, I/O error). What was committed before stays intact. */
export class StoreWriteError extends Error {
  override readonly name = 'StoreWriteError';
  readonly exitCode = ExitCode.runFailed;
}

/** The DuckDB file is held by another process (another writer, or a BI tool reading it). */
export class StoreBusyError extends Error {
  override readonly name = 'StoreBusyError';
  readonly exitCode = ExitCode.locked;
  /** Who holds it, as DuckDB names it ("pid 123 (node)"), and whether it only reads. */
  readonly holder: string;
  readonly byReader: boolean;
  readonly pid: number | undefined;
  constructor(message: string, opts: { cause?: unknown; holder?: string; byReader?: boolean; pid?: number } = {}) {
    super(message, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.holder = opts.holder ?? 'another process';
    this.byReader = opts.byReader ?? false;
    this.pid = opts.pid;
  }
}

/** A store setting from the environment is not valid (names the variable and the accepted form). Exit 2. */
export class StoreSettingError extends Error {
  override readonly name = 'StoreSettingError';
  readonly exitCode = ExitCode.usage;
}

/** A write failure, named after what was being written and saying that committed data is intact. */
export function wrapWriteError(err: unknown, what: string): Error {
  const msg = err instanceof Error ? err.message : String(err);
  const cause = /No space left|ENOSPC|disk full/i.test(msg) ? `the disk is full (${firstLine(msg)})` : firstLine(msg);
  return new StoreWriteError(`${what} failed: ${cause}; data committed before this point is intact`, { cause: err });
}

export function firstLine(s: string): string {
  return s.split('\n')[0]!.slice(0, 300);
}
