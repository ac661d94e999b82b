/**
 * What the notifier remembers between runs and processes: whether a failure is still open (so the
 * next success says "recovered") and whether the lag alert has been sent (so it is sent once per
 * crossing). One small JSON file in the data directory (with many accounts, in each account's
 * directory), `notify-state.json`, mode 0640, replaced by an atomic rename. A file rather than the `_runs` table: failures that never reach the run log
 * (lock held, unusable data directory, sign-in needed) count too, and reading it needs no DuckDB
 * connection after the run has released the data directory. It holds no secret.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../store/durable-fs.js';
import { DIR_MODE } from '../store/layout.js';

export const NOTIFY_STATE_FILE = 'notify-state.json';

export interface NotifyState {
  /** The first failed run of the current streak, until a success has been notified as a recovery. */
  failing: { runId: string | null; command: string; since: string } | null;
  /** Set when lag_exceeded was delivered; cleared when an export finds the lag back under the limit. */
  lagExceeded: { notifiedAt: string; lagSeconds: number } | null;
  /** The days a volume_anomaly was delivered for (each is notified once); absent in files of older versions. */
  volumeAnomalies?: string[];
}

export const EMPTY_NOTIFY_STATE: NotifyState = { failing: null, lagExceeded: null };

/** Each account's of a many-account data directory: one file per account under this directory. */
export const NOTIFY_STATE_DIR = '.notify-state';

/**
 * Where the state of `dataDir` (and, with many accounts, of `account` in it) is kept: the data
 * directory's own file, or the account's file under .notify-state/. Callers name the data directory
 * and the account, never the file.
 */
export function notifyStatePath(dataDir: string, account?: string): string {
  return account === undefined ? join(dataDir, NOTIFY_STATE_FILE) : join(dataDir, NOTIFY_STATE_DIR, `${account}.json`);
}

/** The stored state; the empty state when there is none (or it cannot be read: nothing was sent yet, as far as we know). */
export async function readNotifyState(dataDir: string, account?: string): Promise<NotifyState> {
  let text: string;
  try {
    text = await readFile(notifyStatePath(dataDir, account), 'utf8');
  } catch {
    return EMPTY_NOTIFY_STATE;
  }
  try {
    const v = JSON.parse(text) as Partial<NotifyState>;
    return { failing: v.failing ?? null, lagExceeded: v.lagExceeded ?? null, ...(Array.isArray(v.volumeAnomalies) ? { volumeAnomalies: v.volumeAnomalies.map(String) } : {}) };
  } catch {
    return EMPTY_NOTIFY_STATE;
  }
}

/**
 * Replaces the stored state atomically (write a temporary file, then rename it over the old one).
 * The directory is created when missing: a run that failed before making it (an account whose key
 * cannot be read, a first export without --since) still has its failure recorded, so that the next
 * success posts `run_recovered`.
 */
export async function writeNotifyState(dataDir: string, state: NotifyState, account?: string): Promise<void> {
  const path = notifyStatePath(dataDir, account);
  await mkdir(dirname(path), { recursive: true, mode: DIR_MODE });
  await writeFileAtomic(path, JSON.stringify(state, null, 2) + '\n', { mode: 0o640, exactMode: true });
}
