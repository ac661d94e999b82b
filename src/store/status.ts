/** What `session-etl status` reports, read from the data directory without writing anything. */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { subtractIntervals } from '../time/intervals.js';
import { isoOf } from '../time/windows.js';
import { backfillCommand } from './backfill-command.js';
import { queryRows } from './duckdb.js';
import { StoreBusyError } from './errors.js';
import { holderState, readHolder, type LockHolder } from './lock.js';
import { layoutOf, type OutputFormat } from './layout.js';
import { SessionStore } from './session-store.js';
import { collectState, readStateSnapshot, STATE_FILE, type StoreState } from './state-snapshot.js';

export interface StoreStatus {
  dataDir: string;
  format: OutputFormat;
  checkpoint: string | null;
  /** now - checkpoint, seconds. */
  lagSeconds: number | null;
  coverage: Array<{ from: string; to: string }>;
  coverageHoles: Array<{ from: string; to: string }>;
  rows: number | null;
  partitions: number;
  pendingPartitions: string[];
  /** Committed windows' records not merged into `sessions` yet (merged by the next run). */
  pendingRows: number;
  rejected: number;
  bytes: { duckdb: number; parquet: number; total: number };
  lastRuns: Array<Record<string, unknown>>;
  /** The run holding the data directory now (a live process). */
  runningNow: LockHolder | null;
  /** The lock's holder when its process is gone (on this host): the run died (kill -9, a crash). */
  lastRunDied: { runId: string | null; pid: number; host: string; startedAt: string } | null;
  /** Where the figures come from: the DuckDB file, or (while a run holds it) the run's state snapshot. */
  source: 'duckdb' | 'snapshot';
  /** When the snapshot was written (source snapshot), else null. */
  asOf: string | null;
  /** How far the run going now has got, as of its last commit (from its state snapshot); null when none is going. */
  progress: { windowsTotal: number; windowsDone: number; sessions: number; at: string } | null;
  /**
   * Backfills begun and not completed (interrupted, failed, or going now), with the part of their
   * range not covered yet and the command that resumes each; null while a run holds the DuckDB file.
   */
  unfinishedBackfills: UnfinishedBackfill[] | null;
}

export interface UnfinishedBackfill {
  from: string;
  to: string;
  runId: string;
  startedAt: string;
  /** The parts of [from, to) not covered yet. */
  missing: Array<{ from: string; to: string }>;
  /** Resumes it: the same range again (finished windows are not fetched again). */
  resume: string;
}

/** `parquetDir`: the dataset's root when not the data directory's own (an account's: docs/accounts.md). */
export async function readStatus(dataDir: string, nowMs = Date.now(), runs = 10, parquetDir?: string): Promise<StoreStatus> {
  // The lock lives at the same place whatever the format.
  const holder = (await readHolder(layoutOf(dataDir, 'both').lockPath)) ?? null;
  const alive = holder && holderState(holder) === 'alive' ? holder : null;
  const died = holder && !alive ? holder : null;
  const { state, asOf, unfinishedBackfills } = await readState(dataDir, runs, parquetDir === undefined);
  // The run going now publishes its progress in its snapshot.
  const running = alive ? (await readStateSnapshot(dataDir).catch(() => null))?.running : null;
  const progress = running?.progress && (alive!.runId ?? runIdOf(alive!.command)) === running.runId ? running.progress : null;
  const format = state.format;
  const layout = layoutOf(dataDir, format, parquetDir);
  const { count: partitions, bytes: parquetBytes } = await datasetSize(layout.parquetDir);
  const duckdbBytes = (await sizeOf(layout.dbPath)) + (await sizeOf(`${layout.dbPath}.wal`));
  const cp = state.checkpoint !== null ? Date.parse(state.checkpoint) / 1000 : undefined;
  return {
    dataDir,
    format,
    source: asOf ? 'snapshot' : 'duckdb',
    asOf,
    checkpoint: state.checkpoint,
    lagSeconds: cp !== undefined ? Math.round(nowMs / 1000 - cp) : null,
    coverage: state.coverage,
    coverageHoles: state.coverageHoles,
    rows: state.rows,
    partitions,
    pendingPartitions: state.pendingPartitions,
    pendingRows: state.pendingRows,
    rejected: state.rejected,
    bytes: { duckdb: duckdbBytes, parquet: parquetBytes, total: duckdbBytes + parquetBytes },
    lastRuns: state.lastRuns.slice(0, runs).map((r) => markDied(r, alive, died)),
    runningNow: alive,
    progress,
    unfinishedBackfills,
    lastRunDied: died ? { runId: died.runId ?? runIdOf(died.command), pid: died.pid, host: died.host, startedAt: died.startedAt } : null,
  };
}

/**
 * The store's state (in the format the data directory recorded) from the DuckDB file; while a run
 * holds it (DuckDB lets no other process open it meanwhile), from the snapshot the run publishes,
 * with the time it was written.
 */
async function readState(
  dataDir: string,
  runs: number,
  ownDataDir: boolean,
): Promise<{ state: StoreState; asOf: string | null; unfinishedBackfills: UnfinishedBackfill[] | null }> {
  let store: SessionStore;
  try {
    store = await SessionStore.open({ dataDir, readOnly: true });
  } catch (err) {
    if (!(err instanceof StoreBusyError)) throw err;
    const snapshot = await readStateSnapshot(dataDir);
    if (!snapshot) {
      throw new StoreBusyError(`${err.message}, and it has not published a state snapshot (${STATE_FILE}) yet: try again in a moment`, {
        cause: err,
        holder: err.holder,
      });
    }
    return { state: snapshot, asOf: snapshot.writtenAt, unfinishedBackfills: null };
  }
  try {
    const state = await collectState(store, store.conn, runs);
    return { state, asOf: null, unfinishedBackfills: await unfinished(store, ownDataDir ? dataDir : undefined) };
  } finally {
    await store.close();
  }
}

/** Backfills begun and never completed whose range is not wholly covered since (a later run may have loaded it). */
async function unfinished(store: SessionStore, dataDir: string | undefined): Promise<UnfinishedBackfill[]> {
  const rows = await queryRows<{ range_from: bigint | number; range_to: bigint | number; run_id: string; started: Date | string }>(
    store.conn,
    'SELECT range_from, range_to, run_id, started_at AS started FROM _backfills WHERE completed_at IS NULL ORDER BY started_at',
  ).catch(() => []); // a store from before backfills were recorded
  const coverage = await store.coverage();
  const out: UnfinishedBackfill[] = [];
  for (const r of rows) {
    const range = { start: Number(r.range_from), end: Number(r.range_to) };
    const missing = subtractIntervals(range, coverage);
    if (!missing.length) continue;
    out.push({
      from: isoOf(range.start),
      to: isoOf(range.end),
      runId: r.run_id,
      startedAt: new Date(r.started).toISOString(),
      missing: missing.map((w) => ({ from: isoOf(w.start), to: isoOf(w.end) })),
      resume: backfillCommand(range, dataDir),
    });
  }
  return out;
}

/** The run id in a holder's command ("backfill (run backfill-…)"), for locks written before holders named it. */
function runIdOf(command: string): string | null {
  return /\(run ([^)]+)\)/.exec(command)?.[1] ?? null;
}

/**
 * A run recorded as running that does not hold the lock is not running: it was killed or crashed
 * (the next run records it as died; until then status shows it so).
 */
function markDied(r: Record<string, unknown>, alive: LockHolder | null, died: LockHolder | null): Record<string, unknown> {
  if (r.outcome !== 'running') return r;
  const id = String(r.run_id);
  if (alive && (alive.runId ?? runIdOf(alive.command)) === id) return r;
  if (alive && !(alive.runId ?? runIdOf(alive.command))) return r; // a holder that does not say which run it is
  const deadHolder = died && (died.runId ?? runIdOf(died.command)) === id ? died : null;
  return {
    ...r,
    outcome: 'died',
    error: deadHolder
      ? `its process (pid ${deadHolder.pid} on ${deadHolder.host}) is gone: killed or crashed; the next run records it and resumes its work`
      : 'it is not running (its process is gone): killed or crashed; the next run records it and resumes its work',
  };
}

async function sizeOf(p: string): Promise<number> {
  try {
    return (await stat(p)).size;
  } catch {
    return 0;
  }
}

async function datasetSize(root: string): Promise<{ count: number; bytes: number }> {
  let count = 0;
  let bytes = 0;
  let dirs: string[] = [];
  try {
    dirs = await readdir(root);
  } catch {
    return { count, bytes };
  }
  for (const d of dirs) {
    for (const f of await readdir(join(root, d)).catch(() => [] as string[])) {
      if (!f.endsWith('.parquet')) continue;
      count++;
      bytes += await sizeOf(join(root, d, f));
    }
  }
  return { count, bytes };
}
