/** What the gauges and the health check need from a data directory, read without writing (store/status.ts). */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { DataDirError } from '../store/errors.js';
import type { LockHolder } from '../store/lock.js';
import { accountStatus, readStatus, readStoreReading, type StoreStatus } from '../store/status.js';
import type { VolumeAnomaly, VolumeRule } from '../store/volume-anomalies.js';
import { allStores } from '../accounts/stores.js';
import { legacyAccountDir, legacyAccountParquetDir } from '../accounts/layout.js';
import { legacyAccounts } from '../accounts/legacy.js';
import type { DatasetLocation } from '../store/dataset/location.js';

/** A finished run as monitoring sees it. Times are epoch seconds. */
export interface MonitoredRun {
  runId: string;
  kind: string;
  /** RunSummary's outcomes, or `died`: its process ended without recording one (seen by the next run, or here). */
  outcome: string;
  startedAt: number;
  endedAt: number | null;
  error: string | null;
}

export interface MonitoredState {
  checkpoint: number | null;
  coverageHoles: number;
  /** null for a Parquet-only store. */
  storedSessions: number | null;
  /** The latest run that is not running now. */
  lastRun: MonitoredRun | null;
  lastSuccessAt: number | null;
  /** docs/data-quality.md "Volume anomalies"; absent: none known. */
  volumeAnomalies?: VolumeAnomaly[];
}

export const EMPTY_STATE: MonitoredState = { checkpoint: null, coverageHoles: 0, storedSessions: null, lastRun: null, lastSuccessAt: null };

/** How far back the run log is read to find the last success. */
const RUNS_READ = 200;

/** A directory with no session-etl data yet gives EMPTY_STATE; any other failure is thrown. */
export async function readMonitoredState(dataDir: string, nowMs = Date.now(), dataset?: DatasetLocation, volume?: VolumeRule): Promise<MonitoredState> {
  if (!existsSync(dataDir) && dataset?.kind !== 's3') return EMPTY_STATE;
  let s;
  try {
    s = await readStatus(dataDir, nowMs, RUNS_READ, undefined, dataset, volume);
  } catch (err) {
    if (err instanceof DataDirError && /no session-etl data/.test(err.message)) return EMPTY_STATE;
    throw err;
  }
  return monitoredStateOf(s);
}

/** Each named account's state, each store read once; an account no store holds yet has EMPTY_STATE. */
export async function readAccountsMonitoredStates(
  root: string,
  names: readonly string[],
  nowMs = Date.now(),
  dataset?: DatasetLocation,
  volume?: VolumeRule,
): Promise<Map<string, MonitoredState>> {
  const states = new Map<string, MonitoredState>(names.map((n) => [n, EMPTY_STATE]));
  if (!existsSync(root)) return states;
  for (const store of await allStores(root, dataset)) {
    const reading = await readStoreReading(root, RUNS_READ, store, dataset, volume);
    if (reading.accounts !== 'many') continue;
    for (const a of reading.state.accounts ?? []) {
      if (states.has(a.account)) states.set(a.account, monitoredStateOf(accountStatus(reading, a.account, nowMs, RUNS_READ)));
    }
  }
  // Accounts still in the layout before schema 3 (accounts/NAME/): their own store, read as it is.
  for (const a of legacyAccounts(root, names.filter((n) => states.get(n) === EMPTY_STATE))) {
    states.set(a, monitoredStateOf(await readStatus(legacyAccountDir(root, a), nowMs, RUNS_READ, undefined, { kind: 'local', root: legacyAccountParquetDir(root, a) }, volume)));
  }
  return states;
}

function monitoredStateOf(s: StoreStatus): MonitoredState {
  const seconds = (v: unknown): number | null => (v == null ? null : Date.parse(String(v)) / 1000);
  const runs: MonitoredRun[] = s.lastRuns.map((r) => ({
    runId: String(r.run_id),
    kind: String(r.kind),
    outcome: String(r.outcome),
    startedAt: seconds(r.started_at) ?? 0,
    endedAt: seconds(r.ended_at),
    error: r.error == null ? null : String(r.error),
  }));
  // A `running` row is a run in progress while a run holds the store's lock (it recorded every
  // running row it found when it began as died); otherwise its process died.
  const holder = s.runningNow;
  const inProgress = () => holder !== null && alive(holder);
  const finished = runs
    .filter((r) => r.outcome !== 'running' || !inProgress())
    .map((r) => (r.outcome === 'running' ? { ...r, outcome: 'died' } : r));
  const success = finished.find((r) => r.outcome === 'succeeded' || r.outcome === 'nothing-to-do');
  return {
    checkpoint: s.checkpoint !== null ? Date.parse(s.checkpoint) / 1000 : null,
    coverageHoles: s.coverageHoles.length,
    storedSessions: s.rows,
    lastRun: finished[0] ?? null,
    lastSuccessAt: success ? (success.endedAt ?? success.startedAt) : null,
    volumeAnomalies: s.volumeAnomalies,
  };
}

/** A holder on this host is alive when its pid is; one on another host is taken at its word. */
function alive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
