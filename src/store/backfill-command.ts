/**
 * The `session-etl backfill` command that loads (or resumes loading) a range, as a person pastes it:
 * times as dates when they are UTC midnights, the data directory quoted for a POSIX shell when it
 * needs it; with many accounts, `--account NAME` (the data directory is the one of all accounts).
 * Without `dataDir` the command names the range only.
 */
import { isoOf, type Window } from '../time/windows.js';

export function backfillCommand(range: Window, dataDir?: string, account?: string): string {
  const where = `${dataDir !== undefined ? ` --data-dir ${shellWord(dataDir)}` : ''}${account ? ` --account ${shellWord(account)}` : ''}`;
  return `session-etl backfill --from ${typed(range.start)} --to ${typed(range.end)}${where}`;
}

/** An instant as a person types it: the date alone at midnight UTC. */
export function typed(t: number): string {
  return t % 86_400 === 0 ? isoOf(t).slice(0, 10) : isoOf(t);
}

function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
