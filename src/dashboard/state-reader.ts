/**
 * What the data directory says now, read at each request: the state snapshot a run publishes
 * (state.json) and the lock's holder (a live run or a dead one). The snapshot is the source, as a
 * run holds the DuckDB file while it goes. But a run killed or crashed leaves a snapshot saying it
 * is running, maybe behind the store by its last commits (it publishes at most once a second): then
 * the store itself is read (read-only, briefly, as `status` does), once per change of its files. A
 * run starting meanwhile waits a few seconds for the file (pipeline/open-run.ts); if it got the
 * file first, the snapshot is shown, saying it is from a run that died.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreBusyError } from '../store/errors.js';
import { holderState, readHolder, type LockHolder } from '../store/lock.js';
import { layoutOf } from '../store/layout.js';
import { committedRowsOf, withDiedRunFigures } from '../store/run-log.js';
import { SessionStore } from '../store/session-store.js';
import { collectState, readStateSnapshot, SNAPSHOT_RUNS, STATE_FILE, STATE_SNAPSHOT_VERSION, type StateSnapshot, type StoreState } from '../store/state-snapshot.js';
import type { DashboardSource } from './data-source.js';

export interface StateReading {
  /** The snapshot, or the store's own figures when the snapshot is a dead run's; null when there are none yet. */
  snapshot: StateSnapshot | null;
  /** The writer lock's holder, as its process is alive or gone. */
  liveHolder: LockHolder | null;
  deadHolder: LockHolder | null;
  source: 'snapshot' | 'store';
  /** The snapshot is a dead run's and the store could not be read instead: the run it names. */
  deadRunSnapshot: { runId: string; writtenAt: string } | null;
}

export class StateReader {
  private cached: { key: string; value: Promise<StoreState | null> } | undefined;

  constructor(
    private readonly source: DashboardSource,
    private readonly now: () => number = Date.now,
  ) {}

  /** With an account, that account's part of it (docs/accounts.md). */
  async read(): Promise<StateReading> {
    const r = await this.readStore();
    const account = this.source.account;
    return account === undefined || !r.snapshot ? r : { ...r, snapshot: accountSnapshot(r.snapshot, account) };
  }

  private async readStore(): Promise<StateReading> {
    const holder = (await readHolder(layoutOf(this.source.stateDir, 'both').lockPath)) ?? null;
    const liveHolder = holder && holderState(holder) === 'alive' ? holder : null;
    const deadHolder = holder && !liveHolder ? holder : null;
    const snapshot = await readStateSnapshot(this.source.stateDir);
    const reading: StateReading = { snapshot, liveHolder, deadHolder, source: 'snapshot', deadRunSnapshot: null };
    // A snapshot written by a run that no live process holds the lock for: that run died. No
    // snapshot at all (a store of a release that wrote none, or copied without it): the store says.
    const withoutSnapshot = !snapshot && ['sessions.duckdb', 'state.duckdb'].some((f) => existsSync(join(this.source.stateDir, f)));
    if (liveHolder || !(snapshot?.running || withoutSnapshot)) return reading;
    const state = await this.storeState();
    if (!state) return snapshot?.running ? { ...reading, deadRunSnapshot: { runId: snapshot.running.runId, writtenAt: snapshot.writtenAt } } : reading;
    return {
      ...reading,
      source: 'store',
      snapshot: { version: STATE_SNAPSHOT_VERSION, writtenAt: new Date(this.now()).toISOString(), ...state, running: null },
    };
  }

  /** The store's state, read again only when its files or the snapshot changed; null when a run holds it. */
  private async storeState(): Promise<StoreState | null> {
    const dir = this.source.stateDir;
    const files = ['sessions.duckdb', 'sessions.duckdb.wal', 'state.duckdb', 'state.duckdb.wal', STATE_FILE];
    const key = (await Promise.all(files.map((f) => stat(join(dir, f)).then((s) => `${s.size}:${s.mtimeMs}:${s.ino}`, () => '-')))).join('|');
    if (this.cached?.key === key) return this.cached.value;
    const value = readStore(this.source);
    this.cached = { key, value };
    // A busy store (null) or a failure: ask again next time.
    value.then((v) => v ?? this.forget(value), () => this.forget(value));
    return value;
  }

  private forget(value: Promise<StoreState | null>): void {
    if (this.cached?.value === value) this.cached = undefined;
  }
}

async function readStore(source: DashboardSource): Promise<StoreState | null> {
  const store = await SessionStore.open({ dataDir: source.stateDir, readOnly: true }).catch((err: unknown) => {
    if (err instanceof StoreBusyError) return null;
    throw err;
  });
  if (!store) return null;
  try {
    // Read while no run holds the store: a run still marked running died; the store says what it committed.
    const state = await collectState(store, store.conn, SNAPSHOT_RUNS);
    return { ...state, lastRuns: await withDiedRunFigures(store.conn, committedRowsOf(store), state.lastRuns) };
  } finally {
    await store.close();
  }
}

/**
 * A many-account store's snapshot as one account's: its checkpoint, coverage, rows and runs (the
 * store's pending work is shared). An account the store does not hold yet has nothing stored.
 */
function accountSnapshot(s: StateSnapshot, account: string): StateSnapshot {
  const own = s.accounts?.find((a) => a.account === account);
  const { accounts: _all, ...rest } = s;
  return {
    ...rest,
    checkpoint: own?.checkpoint ?? null,
    coverage: own?.coverage ?? [],
    coverageHoles: own?.coverageHoles ?? [],
    rows: own ? own.rows : s.format === 'parquet' ? null : 0,
    rejected: own?.rejected ?? 0,
    lastRuns: s.lastRuns.filter((r) => r.account === account),
    volumeAnomalies: own?.volumeAnomalies ?? [],
    lastVerification: own?.lastVerification ?? null,
  };
}
