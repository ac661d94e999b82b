/**
 * What the notifier remembers between runs: an open failure, a sent lag alert, the anomalous days notified. A file
 * rather than the `_runs` table: failures that never reach the run log (lock held, sign-in needed) count too, and
 * reading it needs no DuckDB connection after the run released the data directory. It holds no secret.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../store/durable-fs.js';
import { DIR_MODE } from '../store/layout.js';

const NOTIFY_STATE_FILE = 'notify-state.json';

export interface NotifyState {
  /** The first failed run of the current streak, until a recovery is notified. */
  failing: { runId: string | null; command: string; since: string } | null;
  /** Cleared when an export finds the lag back under the limit. */
  lagExceeded: { notifiedAt: string; lagSeconds: number } | null;
  /** Absent in files of older versions. */
  volumeAnomalies?: string[];
}

export const EMPTY_NOTIFY_STATE: NotifyState = { failing: null, lagExceeded: null };

/** With many accounts, one file per account under this directory. */
const NOTIFY_STATE_DIR = '.notify-state';

function notifyStatePath(dataDir: string, account?: string): string {
  return account === undefined ? join(dataDir, NOTIFY_STATE_FILE) : join(dataDir, NOTIFY_STATE_DIR, `${account}.json`);
}

/** The empty state when there is none or it cannot be read (nothing was sent yet, as far as we know). */
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

/** Creates the directory when missing: a run that failed before making it still has its failure recorded. */
export async function writeNotifyState(dataDir: string, state: NotifyState, account?: string): Promise<void> {
  const path = notifyStatePath(dataDir, account);
  await mkdir(dirname(path), { recursive: true, mode: DIR_MODE });
  await writeFileAtomic(path, JSON.stringify(state, null, 2) + '\n', { mode: 0o640, exactMode: true });
}
