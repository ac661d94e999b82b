/** What `session-etl status` reports, read from the data directory without writing anything. */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { unguessable } from '../util/temp-file.js';
import { join } from 'node:path';
import { subtractIntervals } from '../time/intervals.js';
import { isoOf } from '../time/windows.js';
import { rangeArgs, suggestedCommand } from '../util/suggested-command.js';
import { bucketCacheDir, bucketDatasetSize, copyBucketState, mirrorDataset } from './dataset/bucket-reader.js';
import type { DatasetLocation } from './dataset/location.js';
import { queryRows, sqlString } from './duckdb.js';
import { readVolumeAnomalies } from './read-volume-anomalies.js';
import { committedRowsOf, withDiedRunFigures } from './run-log.js';
import { DEFAULT_VOLUME_RULE } from './volume-anomalies.js';
import { sizeOf } from './durable-fs.js';
import { DataDirError, StoreBusyError } from './errors.js';
import { holderState, readHolder, type LockHolder } from './lock.js';
import { layoutOf, type OutputFormat, type ShardId, type StoreLayout } from './layout.js';
import { SessionStore, SINGLE_ACCOUNT } from './session-store.js';
import { collectState, plainRow, readStateSnapshot, STATE_FILE, type StoreState } from './state-snapshot.js';
import type { LastVerification } from './verify-log.js';
import type { VolumeAnomaly, VolumeRule } from './volume-anomalies.js';

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
  /**
   * How far the run going now has got, as of its last commit (from its state snapshot); null when
   * none is going. With many accounts, the run of the whole store (every account it runs).
   */
  /** Finished days with far fewer sessions than their weekday usually has (docs/data-quality.md "Volume anomalies"). */
  volumeAnomalies: VolumeAnomaly[];
  /** The latest `session-etl verify` and what it found; null when never verified. */
  lastVerification: LastVerification | null;
  progress: RunProgress | null;
  /**
   * Backfills begun and not completed (interrupted, failed, or going now), with the part of their
   * range not covered yet and the command that resumes each; null while a run holds the DuckDB file.
   */
  unfinishedBackfills: UnfinishedBackfill[] | null;
  /**
   * The schema version of a store written by an earlier release, read as it is (the next export or
   * backfill upgrades it: schema.ts readAsCurrentSchema); null when it is this release's, or unknown (a snapshot).
   */
  olderSchema: number | null;
  /**
   * A many-account store's accounts: its partitions, size, pending work and running run are the
   * whole store's, shared by them (each account's own figures are its checkpoint, coverage, rows and runs); null with one account.
   */
  storeAccounts: number | null;
}

export interface RunProgress {
  windowsTotal: number;
  windowsDone: number;
  sessions: number;
  at: string;
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

/**
 * What `status` reports of a data directory's store (`shard`: shard I of N's; layout.ts). A
 * many-account store: use readStoreReading and accountStatus.
 */
export async function readStatus(dataDir: string, nowMs = Date.now(), runs = 10, shard?: ShardId, dataset?: DatasetLocation, volume?: VolumeRule): Promise<StoreStatus> {
  return accountStatus(await readStoreReading(dataDir, runs, shard, dataset, volume), SINGLE_ACCOUNT, nowMs, runs);
}

/** One read of a store: its own figures, its state, and each account's latest runs. */
export interface StoreReading {
  dataDir: string;
  format: OutputFormat;
  accounts: 'single' | 'many';
  state: StoreState;
  /** A many-account store's latest runs of each account (up to the number asked for). */
  runsByAccount: Map<string, Array<Record<string, unknown>>>;
  partitions: number;
  bytes: { duckdb: number; parquet: number; total: number };
  runningNow: LockHolder | null;
  lastRunDied: LockHolder | null;
  source: 'duckdb' | 'snapshot';
  asOf: string | null;
  progress: RunProgress | null;
  /** Each account's unfinished backfills ('' in a single-account store); null from a snapshot. */
  unfinishedByAccount: Map<string, UnfinishedBackfill[]> | null;
  /** See StoreStatus.olderSchema. */
  olderSchema: number | null;
}

/** The bucket's day files as a reading listed them: how many, and their bytes. */
interface DatasetListing {
  dataset?: { count: number; bytes: number };
}

/** Reads a store once (the DuckDB file, or while a run holds it the run's snapshot), without writing anything. */
export async function readStoreReading(dataDir: string, runs = 10, shard?: ShardId, dataset?: DatasetLocation, volume?: VolumeRule): Promise<StoreReading> {
  // The lock lives at the same place whatever the format.
  const lockLayout = layoutOf(dataDir, 'both', shard);
  const holder = (await readHolder(lockLayout.lockPath)) ?? null;
  const alive = holder && holderState(holder) === 'alive' ? holder : null;
  const died = holder && !alive ? holder : null;
  // With the dataset in a bucket and no store here (a fresh machine), the state the runs keep in the bucket.
  const stateDir = dataset?.kind === 's3' && !existsSync(lockLayout.dbPath) && !existsSync(layoutOf(dataDir, 'parquet', shard).dbPath)
    ? await bucketStateHere(dataDir, dataset, lockLayout)
    : dataDir;
  // A Parquet-only store's rows are counted in a copy of the bucket's day files: the listing that
  // copy made is the one the partitions and the size come from (the bucket listed once).
  const listed: DatasetListing = {};
  const { state, asOf, runsByAccount, unfinishedByAccount, olderSchema } = await readState(stateDir, runs, stateDir === dataDir ? shard : undefined, dataDir, volume, dataset, alive !== null, listed);
  // The run going now publishes its progress in its snapshot.
  const running = alive ? (await readStateSnapshot(lockLayout.storeDir).catch(() => null))?.running : null;
  const progress = running?.progress && (alive!.runId ?? runIdOf(alive!.command)) === running.runId ? running.progress : null;
  const layout = stateDir === dataDir ? layoutOf(dataDir, state.format, shard) : layoutOf(stateDir, state.format);
  const { count: partitions, bytes: parquetBytes } =
    dataset?.kind === 's3' ? (listed.dataset ?? (await bucketDatasetSize(dataset))) : await datasetSize(dataset?.root ?? layout.parquetDir);
  const duckdbBytes = (await sizeOf(layout.dbPath)) + (await sizeOf(`${layout.dbPath}.wal`));
  return {
    dataDir,
    format: state.format,
    accounts: state.accounts ? 'many' : 'single',
    state,
    runsByAccount,
    partitions,
    bytes: { duckdb: duckdbBytes, parquet: parquetBytes, total: duckdbBytes + parquetBytes },
    runningNow: alive,
    lastRunDied: died,
    source: asOf ? 'snapshot' : 'duckdb',
    asOf,
    progress,
    unfinishedByAccount,
    olderSchema,
  };
}

/** One account's status from a store's reading ('' for a single-account store). */
export function accountStatus(r: StoreReading, account: string, nowMs = Date.now(), runs = 10): StoreStatus {
  const own = r.state.accounts?.find((a) => a.account === account);
  const many = r.state.accounts !== undefined;
  const checkpoint = many ? (own?.checkpoint ?? null) : r.state.checkpoint;
  const cp = checkpoint !== null ? Date.parse(checkpoint) / 1000 : undefined;
  const lastRuns = many
    ? (r.runsByAccount.get(account) ?? r.state.lastRuns.filter((x) => x.account === account))
    : r.state.lastRuns;
  const died = r.lastRunDied;
  return {
    dataDir: r.dataDir,
    format: r.format,
    source: r.source,
    asOf: r.asOf,
    checkpoint,
    lagSeconds: cp !== undefined ? Math.round(nowMs / 1000 - cp) : null,
    coverage: many ? (own?.coverage ?? []) : r.state.coverage,
    coverageHoles: many ? (own?.coverageHoles ?? []) : r.state.coverageHoles,
    rows: many ? (own?.rows ?? (r.format === 'parquet' ? null : 0)) : r.state.rows,
    partitions: r.partitions,
    pendingPartitions: r.state.pendingPartitions,
    pendingRows: r.state.pendingRows,
    rejected: many ? (own?.rejected ?? 0) : r.state.rejected,
    bytes: r.bytes,
    lastRuns: lastRuns.slice(0, runs).map((x) => markDied(x, r.runningNow, died)),
    runningNow: r.runningNow,
    progress: r.progress,
    unfinishedBackfills: r.unfinishedByAccount ? (r.unfinishedByAccount.get(account) ?? []) : null,
    lastRunDied: died ? { runId: died.runId ?? runIdOf(died.command), pid: died.pid, host: died.host, startedAt: died.startedAt } : null,
    volumeAnomalies: (many ? own?.volumeAnomalies : r.state.volumeAnomalies) ?? [],
    lastVerification: (many ? own?.lastVerification : r.state.lastVerification) ?? null,
    olderSchema: r.olderSchema,
    storeAccounts: many ? (r.state.accounts?.length ?? 0) : null,
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
  shard: ShardId | undefined,
  commandDataDir: string,
  volume?: VolumeRule,
  dataset?: DatasetLocation,
  held = false,
  listed: DatasetListing = {},
): Promise<{
  state: StoreState;
  asOf: string | null;
  runsByAccount: Map<string, Array<Record<string, unknown>>>;
  unfinishedByAccount: Map<string, UnfinishedBackfill[]> | null;
  olderSchema: number | null;
}> {
  let store: SessionStore;
  try {
    // Its dataset may be outside the store's directory: the command's data directory (a bucket's local
    // copy, an earlier release's account stores) or a dataset root of its own.
    const readDirs = [commandDataDir, ...(dataset?.kind === 'local' ? [dataset.root] : [])];
    store = await SessionStore.open({ dataDir, readOnly: true, readDirs, ...(shard ? { shard } : {}) });
  } catch (err) {
    if (!(err instanceof StoreBusyError)) throw err;
    const storeDir = layoutOf(dataDir, 'both', shard).storeDir;
    const snapshot = await readStateSnapshot(storeDir);
    if (!snapshot) {
      throw new StoreBusyError(`${err.message}, and it has not published a state snapshot (${STATE_FILE}) yet: try again in a moment`, {
        cause: err,
        holder: err.holder,
      });
    }
    // The snapshot's anomalies were judged under the rule of the run that wrote it; none when the check is off here.
    const off = volume !== undefined && !(volume.threshold > 0);
    const state = off
      ? { ...snapshot, volumeAnomalies: [], ...(snapshot.accounts ? { accounts: snapshot.accounts.map((a) => ({ ...a, volumeAnomalies: [] })) } : {}) }
      : snapshot;
    return { state, asOf: snapshot.writtenAt, runsByAccount: new Map(), unfinishedByAccount: null, olderSchema: null };
  }
  try {
    let state = await collectState(store, store.conn, runs, volume ? { volume } : {});
    if (store.format === 'parquet') state = await withDatasetCounts(store, state, commandDataDir, volume, dataset, listed);
    // No run holds the store: a run still marked running died, and the store says what it committed.
    const rowsOf = committedRowsOf(store);
    const died = (list: Array<Record<string, unknown>>) => (held ? Promise.resolve(list) : withDiedRunFigures(store.conn, rowsOf, list));
    state = { ...state, lastRuns: await died(state.lastRuns) };
    const runsByAccount = new Map<string, Array<Record<string, unknown>>>();
    if (store.shape.many) {
      for (const r of await died((await store.lastRunsByAccount(runs)).map((x) => plainRow(x, { keepAccount: true })))) {
        const list = runsByAccount.get(String(r.account)) ?? runsByAccount.set(String(r.account), []).get(String(r.account))!;
        list.push(r);
      }
    }
    const older = store.schemaReading?.older ? store.schemaReading.version : null;
    return { state, asOf: null, runsByAccount, unfinishedByAccount: await unfinished(store, commandDataDir), olderSchema: older };
  } finally {
    await store.close();
  }
}

/**
 * A Parquet-only store's rows, counted in its day files (their footers: DuckDB reads a file's row
 * count from its metadata), and its volume anomalies judged on them. With the dataset in a bucket,
 * the files are those of the data directory's local copy (bucket-reader.ts: only the files that
 * changed since the last copy are downloaded), which the state's own counts cannot see.
 */
async function withDatasetCounts(
  store: SessionStore,
  state: StoreState,
  dataDir: string,
  volume?: VolumeRule,
  dataset?: DatasetLocation,
  listed: DatasetListing = {},
): Promise<StoreState> {
  let parquetDir = dataset?.kind === 'local' ? dataset.root : store.layout.parquetDir;
  if (dataset?.kind === 's3') {
    parquetDir = join(bucketCacheDir(dataDir), 'dataset');
    const m = await mirrorDataset(dataset, parquetDir);
    listed.dataset = { count: m.files, bytes: m.bytes };
  }
  const counted = { format: store.format, shape: store.shape, layout: { ...store.layout, parquetDir } };
  const files = join(parquetDir, 'date=*', store.layout.partitionFile);
  const any = (await readdir(parquetDir).catch(() => [] as string[])).some((d) => d.startsWith('date=') && existsSync(join(parquetDir, d, store.layout.partitionFile)));
  const rows = new Map<string, number>();
  if (any) {
    for (const r of await queryRows<{ a: string; n: bigint }>(store.conn, `SELECT ${store.shape.account()} AS a, count(*) AS n FROM read_parquet(${sqlString(files)}, hive_partitioning = true) GROUP BY ALL`)) {
      rows.set(r.a, Number(r.n));
    }
  }
  const anomalies = dataset?.kind === 's3' ? await readVolumeAnomalies(store.conn, counted, volume ?? DEFAULT_VOLUME_RULE) : null;
  return {
    ...state,
    rows: [...rows.values()].reduce((n, x) => n + x, 0),
    ...(anomalies && !state.accounts ? { volumeAnomalies: anomalies.get(SINGLE_ACCOUNT) ?? [] } : {}),
    ...(state.accounts
      ? { accounts: state.accounts.map((a) => ({ ...a, rows: rows.get(a.account) ?? 0, ...(anomalies ? { volumeAnomalies: anomalies.get(a.account) ?? [] } : {}) })) }
      : {}),
  };
}

/**
 * A copy of the state a bucket keeps for the store (format parquet), in the data directory's cache:
 * a directory to read as a store. Refused (as "no data") when the bucket keeps none.
 */
async function bucketStateHere(dataDir: string, l: Extract<DatasetLocation, { kind: 's3' }>, layout: StoreLayout): Promise<string> {
  const store = layout.storeDir === dataDir ? '' : layout.storeDir.slice(dataDir.length + 1);
  const dir = join(bucketCacheDir(dataDir), 'state', store);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  // A new file under an unguessable name (never through a link planted at a name), then renamed into place.
  const tmp = join(dir, `.state.duckdb.${unguessable()}.part`);
  if (!(await copyBucketState(l, store, 'state.duckdb', tmp))) {
    throw new DataDirError(`no session-etl data in ${dataDir} nor in ${l.url} (no state kept there): run a backfill or an export first`);
  }
  await rename(tmp, join(dir, 'state.duckdb'));
  await rm(join(dir, 'state.duckdb.wal'), { force: true });
  return dir;
}

/**
 * Backfills begun and never completed whose range is not wholly covered since (a later run may have
 * loaded it), by account; each with the command that resumes it.
 */
async function unfinished(store: SessionStore, dataDir: string): Promise<Map<string, UnfinishedBackfill[]>> {
  const rows = await queryRows<{ account: string; range_from: bigint | number; range_to: bigint | number; run_id: string; started: Date | string }>(
    store.conn,
    'SELECT account, range_from, range_to, run_id, started_at AS started FROM _backfills WHERE completed_at IS NULL ORDER BY started_at',
  );
  const out = new Map<string, UnfinishedBackfill[]>();
  for (const r of rows) {
    const range = { start: Number(r.range_from), end: Number(r.range_to) };
    const missing = subtractIntervals(range, await store.coverage(r.account));
    if (!missing.length) continue;
    const list = out.get(r.account) ?? out.set(r.account, []).get(r.account)!;
    list.push({
      from: isoOf(range.start),
      to: isoOf(range.end),
      runId: r.run_id,
      startedAt: new Date(r.started).toISOString(),
      missing: missing.map((w) => ({ from: isoOf(w.start), to: isoOf(w.end) })),
      resume: suggestedCommand('backfill', rangeArgs(range), { dataDir, account: r.account || undefined }),
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
  // The run holding the lock recorded every running row it found as died when it began: the rest are its own.
  if (alive) return r;
  const deadHolder = died;
  return {
    ...r,
    outcome: 'died',
    error: deadHolder
      ? `its process (pid ${deadHolder.pid} on ${deadHolder.host}) is gone: killed or crashed; the next run records it and resumes its work`
      : 'it is not running (its process is gone): killed or crashed; the next run records it and resumes its work',
  };
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
