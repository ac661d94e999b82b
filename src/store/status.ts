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
import { hasDayFile, readVolumeAnomalies } from './read-volume-anomalies.js';
import { committedRowsOf, withDiedRunFigures } from './run-log.js';
import { DEFAULT_VOLUME_RULE } from './volume-anomalies.js';
import { sizeOf } from './durable-fs.js';
import { DataDirError, StoreBusyError } from './errors.js';
import { holderState, readHolder, type LockHolder } from './lock.js';
import { layoutOf, type ShardId, type StoreLayout } from './layout.js';
import { SessionStore, SINGLE_ACCOUNT } from './session-store.js';
import { collectState, plainRow, readStateSnapshot, STATE_FILE, type StoreState } from './state-snapshot.js';
import type { VolumeRule } from './volume-anomalies.js';

type Interval = { from: string; to: string };
type RunRows = Array<Record<string, unknown>>;

/** What `status` shows of one account (of the one account of a single-account store): accountStatus. */
export type StoreStatus = ReturnType<typeof accountStatus>;
/** One read of a store: its own figures, its state, and each account's latest runs. */
type StoreReading = Awaited<ReturnType<typeof readStoreReading>>;

interface UnfinishedBackfill {
  from: string;
  to: string;
  runId: string;
  startedAt: string;
  /** The parts of [from, to) not covered yet. */
  missing: Interval[];
  /** The same range again (finished windows are not fetched again). */
  resume: string;
}

/** What `status` reports of a data directory's store (`shard`: layout.ts). Many accounts: readStoreReading and accountStatus. */
export async function readStatus(dataDir: string, nowMs = Date.now(), runs = 10, shard?: ShardId, dataset?: DatasetLocation, volume?: VolumeRule): Promise<StoreStatus> {
  return accountStatus(await readStoreReading(dataDir, runs, shard, dataset, volume), SINGLE_ACCOUNT, nowMs, runs);
}

/** What readState reads of the store itself. */
interface StoreRead {
  state: StoreState;
  /** When the snapshot read was written; null when read from the DuckDB file. */
  asOf: string | null;
  /** A many-account store's latest runs of each account (up to the number asked for). */
  runsByAccount: Map<string, RunRows>;
  /** Each account's unfinished backfills ('' in a single-account store); null from a snapshot. */
  unfinishedByAccount: Map<string, UnfinishedBackfill[]> | null;
  /** The schema version of a store of an earlier release, read as it is (schema.ts readAsCurrentSchema); null when current or unknown. */
  olderSchema: number | null;
}

/** The bucket's day files as a reading listed them: how many, and their bytes. */
interface DatasetListing {
  dataset?: { count: number; bytes: number };
}

/** Reads a store once (the DuckDB file, or while a run holds it the run's snapshot), without writing anything. */
export async function readStoreReading(dataDir: string, runs = 10, shard?: ShardId, dataset?: DatasetLocation, volume?: VolumeRule) {
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
    accounts: state.accounts ? ('many' as const) : ('single' as const),
    state,
    runsByAccount,
    partitions,
    bytes: { duckdb: duckdbBytes, parquet: parquetBytes, total: duckdbBytes + parquetBytes },
    runningNow: alive,
    /** The lock's holder when its process is gone (on this host): the run died (kill -9, a crash). */
    lastRunDied: died,
    /** The DuckDB file, or (while a run holds it) the run's state snapshot, written at `asOf`. */
    source: asOf ? ('snapshot' as const) : ('duckdb' as const),
    asOf,
    progress,
    unfinishedByAccount,
    olderSchema,
  };
}

/** One account's status from a store's reading ('' for a single-account store). */
export function accountStatus(r: StoreReading, account: string, nowMs = Date.now(), runs = 10) {
  const many = r.state.accounts !== undefined;
  // A many-account store's figures are the account's own; a single-account store's, the state's.
  const own = many ? r.state.accounts?.find((a) => a.account === account) : r.state;
  const checkpoint = own?.checkpoint ?? null;
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
    /** now - checkpoint, seconds. */
    lagSeconds: cp !== undefined ? Math.round(nowMs / 1000 - cp) : null,
    coverage: own?.coverage ?? [],
    coverageHoles: own?.coverageHoles ?? [],
    rows: many ? (own?.rows ?? (r.format === 'parquet' ? null : 0)) : r.state.rows,
    partitions: r.partitions,
    pendingPartitions: r.state.pendingPartitions,
    /** Committed windows' records not merged into `sessions` yet (merged by the next run). */
    pendingRows: r.state.pendingRows,
    rejected: own?.rejected ?? 0,
    bytes: r.bytes,
    lastRuns: lastRuns.slice(0, runs).map((x) => markDied(x, r.runningNow, died)),
    /** The run holding the data directory now (a live process), and its progress as of its last commit (its snapshot's). */
    runningNow: r.runningNow,
    progress: r.progress,
    unfinishedBackfills: r.unfinishedByAccount ? (r.unfinishedByAccount.get(account) ?? []) : null,
    lastRunDied: died ? { runId: died.runId ?? runIdOf(died.command), pid: died.pid, host: died.host, startedAt: died.startedAt } : null,
    /** Finished days with far fewer sessions than their weekday usually has (docs/data-quality.md "Volume anomalies"). */
    volumeAnomalies: own?.volumeAnomalies ?? [],
    lastVerification: own?.lastVerification ?? null,
    olderSchema: r.olderSchema,
    /** A many-account store's accounts (its partitions, size, pending work and running run are the whole store's). */
    storeAccounts: many ? (r.state.accounts?.length ?? 0) : null,
  };
}

/** The store's state from the DuckDB file; while a run holds it (DuckDB lets no other process open it), from its snapshot. */
async function readState(
  dataDir: string,
  runs: number,
  shard: ShardId | undefined,
  commandDataDir: string,
  volume?: VolumeRule,
  dataset?: DatasetLocation,
  held = false,
  listed: DatasetListing = {},
): Promise<StoreRead> {
  let store: SessionStore;
  try {
    // Its dataset may be outside the store's directory: the command's data directory (a bucket's local
    // copy, an earlier release's account stores) or a dataset root of its own.
    const readDirs = [commandDataDir, ...(dataset?.kind === 'local' ? [dataset.root] : [])];
    store = await SessionStore.open({ dataDir, readOnly: true, readDirs, ...(shard ? { shard } : {}) });
  } catch (err) {
    if (!(err instanceof StoreBusyError)) throw err;
    const snapshot = await readStateSnapshot(layoutOf(dataDir, 'both', shard).storeDir);
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
    const died = (list: RunRows) => (held ? Promise.resolve(list) : withDiedRunFigures(store.conn, rowsOf, list));
    state = { ...state, lastRuns: await died(state.lastRuns) };
    const runsByAccount = new Map<string, RunRows>();
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
 * A Parquet-only store's rows counted in its day files' footers; with the dataset in a bucket, in the
 * local copy (only changed files downloaded), with the volume anomalies the state's own counts cannot see.
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
  const rows = new Map<string, number>();
  if (await hasDayFile(parquetDir, store.layout.partitionFile)) {
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

/** A copy of the state a bucket keeps for the store (format parquet), in the data directory's cache; "no data" without one. */
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

/** Backfills never completed whose range is not wholly covered since (a later run may have loaded it), by account. */
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

/** A run recorded as running while no live process holds the lock died (a live holder recorded the others when it began). */
function markDied(r: Record<string, unknown>, alive: LockHolder | null, died: LockHolder | null): Record<string, unknown> {
  if (r.outcome !== 'running' || alive) return r;
  const gone = died ? `its process (pid ${died.pid} on ${died.host}) is gone` : 'it is not running (its process is gone)';
  return { ...r, outcome: 'died', error: `${gone}: killed or crashed; the next run records it and resumes its work` };
}

async function datasetSize(root: string): Promise<{ count: number; bytes: number }> {
  let count = 0;
  let bytes = 0;
  for (const d of await readdir(root).catch(() => [] as string[])) {
    for (const f of await readdir(join(root, d)).catch(() => [] as string[])) {
      if (!f.endsWith('.parquet')) continue;
      count++;
      bytes += await sizeOf(join(root, d, f));
    }
  }
  return { count, bytes };
}
