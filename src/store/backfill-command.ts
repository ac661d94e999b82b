/**
 * The `session-etl backfill` command that loads (or resumes loading) a range, as a person pastes it:
 * times as dates when they are UTC midnights, the data directory quoted for a POSIX shell when it
 * needs it. An account's data directory (accounts/NAME) is not one to give as --data-dir: without
 * `dataDir` the command names the range only.
 */
import { isoOf, type Window } from '../time/windows.js';

export function backfillCommand(range: Window, dataDir?: string): string {
  return `session-etl backfill --from ${typed(range.start)} --to ${typed(range.end)}${dataDir !== undefined ? ` --data-dir ${shellWord(dataDir)}` : ''}`;
}

/** An instant as a person types it: the date alone at midnight UTC. */
export function typed(t: number): string {
  return t % 86_400 === 0 ? isoOf(t).slice(0, 10) : isoOf(t);
}

function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
