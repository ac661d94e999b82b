/**
 * The commands session-etl suggests (errors, `status`, `/healthz`, notifications, the dashboard), built one way so
 * that, pasted into a shell in the same working directory, one runs against the same data as its suggester.
 */
import { isoOf, type Window } from '../time/windows.js';

/** Which data a suggested command must run against. */
export interface CommandTarget {
  dataDir?: string | undefined;
  /** Default: the one this process loaded (`rememberConfigFile`). */
  config?: string | null | undefined;
  account?: string | undefined;
}

let configFile: string | undefined;

/** Records the configuration file the command loaded: every command suggested from now on carries it. */
export function rememberConfigFile(file: string | null | undefined): void {
  configFile = file ?? undefined;
}

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
function instantArg(t: number): string {
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
