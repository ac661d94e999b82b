/**
 * The commands session-etl suggests — in errors (resume a backfill, repair a verify), `status`,
 * `status --check`, `/healthz`, notifications and the dashboard — built one way: `session-etl`,
 * the command and its arguments, then the flags that say which data the user pointed it at
 * (`--data-dir`, `--config`, `--account`), every word quoted for a POSIX shell by `shellQuote`.
 * Pasted into a shell (in the same working directory: paths are kept as the user gave them), a
 * suggested command runs against the same data as the command that suggested it.
 */
import { isoOf, type Window } from '../time/windows.js';

/** Which data a suggested command must run against. */
export interface CommandTarget {
  /** The data directory. */
  dataDir?: string | undefined;
  /** The configuration file; default: the one this process loaded (`rememberConfigFile`). */
  config?: string | null | undefined;
  /** The account, with many accounts. */
  account?: string | undefined;
}

/** The configuration file this process was given (--config or SESSION_ETL_CONFIG), set when it is loaded. */
let configFile: string | undefined;

/** Records the configuration file the command loaded: every command suggested from now on carries it. */
export function rememberConfigFile(file: string | null | undefined): void {
  configFile = file ?? undefined;
}

/** Words a POSIX shell reads back unchanged without quotes. */
const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** A word as a POSIX shell reads it back unchanged: as it is when plain, else in single quotes. */
export function shellQuote(word: string): string {
  return PLAIN.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `session-etl COMMAND ARGS --data-dir D --config C --account A`, each word quoted. `command` may be two words ("accounts adopt"). */
export function suggestedCommand(command: string, args: readonly string[], to: CommandTarget = {}): string {
  const words = ['session-etl', ...command.split(' '), ...args];
  if (to.dataDir) words.push('--data-dir', to.dataDir);
  const config = to.config === undefined ? configFile : (to.config ?? undefined);
  if (config) words.push('--config', config);
  if (to.account) words.push('--account', to.account);
  return words.map(shellQuote).join(' ');
}

/** An instant as a person types it: the date alone at midnight UTC, else ISO 8601. */
export function instantArg(t: number): string {
  return t % 86_400 === 0 ? isoOf(t).slice(0, 10) : isoOf(t);
}

/** `--from X --to Y` of a range. */
export function rangeArgs(range: Window): string[] {
  return ['--from', instantArg(range.start), '--to', instantArg(range.end)];
}

/** `--from DAY --to NEXT-DAY` of one UTC day (YYYY-MM-DD). */
export function dayArgs(date: string): string[] {
  const start = Date.parse(`${date}T00:00:00Z`) / 1000;
  return rangeArgs({ start, end: start + 86_400 });
}
