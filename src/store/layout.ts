import { existsSync, type Dirent } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UNGUESSABLE } from '../util/temp-file.js';
import { DataDirError } from './errors.js';

export type OutputFormat = 'duckdb' | 'parquet' | 'both';

/** One of N stores of a many-account data directory (`--shard I/N`: docs/accounts.md). N = 1: the data directory's own. */
export interface ShardId {
  index: number;
  count: number;
}

/** Where everything of one store lives under the data directory. */
export interface StoreLayout {
  dataDir: string;
  /** Where the store's own files are: the data directory, or shards/I-of-N/ for shard I of N > 1. */
  storeDir: string;
  /** The DuckDB file: state and, unless format parquet, the sessions table. */
  dbPath: string;
  /** Root of the Hive-partitioned dataset (parquet/sessions/date=YYYY-MM-DD/part-….parquet), shared by every store. */
  parquetDir: string;
  /** The name of this store's file in each day's directory: part-0.parquet, or part-I-of-N.parquet for shard I of N > 1. */
  partitionFile: string;
  /** Temporary files, on the same file system so that renames are atomic; never under parquetDir. */
  tmpDir: string;
  /** Committed windows' record files waiting for their merge (listed in _pending_files); removed when empty. */
  pendingDir: string;
  lockPath: string;
}

export const SHARDS_DIR = 'shards';

export function shardName(shard: ShardId): string {
  return `${shard.index}-of-${shard.count}`;
}

/** The store of `dataDir` (shard I of N > 1: under shards/I-of-N/). */
export function layoutOf(dataDir: string, format: OutputFormat, shard?: ShardId): StoreLayout {
  const sharded = shard !== undefined && shard.count > 1;
  const storeDir = sharded ? join(dataDir, SHARDS_DIR, shardName(shard)) : dataDir;
  return {
    dataDir,
    storeDir,
    dbPath: join(storeDir, format === 'parquet' ? 'state.duckdb' : 'sessions.duckdb'),
    parquetDir: join(dataDir, 'parquet', 'sessions'),
    partitionFile: sharded ? `part-${shardName(shard)}.parquet` : PARTITION_FILE,
    tmpDir: join(storeDir, '.tmp'),
    pendingDir: join(storeDir, 'pending'),
    lockPath: join(storeDir, '.session-etl.lock'),
  };
}

/** Whether `dataDir` holds a store (of any format): something was exported there. */
export function holdsStore(dataDir: string): boolean {
  return (['both', 'parquet'] as const).some((f) => existsSync(layoutOf(dataDir, f).dbPath));
}

/** Name of the partition holding sessions without a start time (Hive's default partition: read back as NULL). */
export const NULL_PARTITION = '__HIVE_DEFAULT_PARTITION__';
export const PARTITION_FILE = 'part-0.parquet';
/** The files of a day's directory that a store writes: part-0.parquet, part-I-of-N.parquet. */
export const PARTITION_FILE_NAME = /^part-(?:0|\d{1,6}-of-\d{1,6})\.parquet$/;

/** A partition's value: a UTC day (YYYY-MM-DD) or Hive's default partition. */
const PARTITION_VALUE = /^(?:\d{4}-\d{2}-\d{2}|__HIVE_DEFAULT_PARTITION__)$/;

export function isPartition(value: unknown): value is string {
  return typeof value === 'string' && PARTITION_VALUE.test(value);
}

/** A partition read back, checked before it reaches a path or key: else refused (DataDirError) naming where it came from. */
export function checkPartition(value: unknown, where: string): string {
  if (isPartition(value)) return value;
  const shown = JSON.stringify(String(value)).slice(0, 80);
  throw new DataDirError(
    `${where} holds the partition ${shown}, which is not a day (YYYY-MM-DD) nor ${NULL_PARTITION}: session-etl never writes one, ` +
      'so the store was changed by something else; nothing was written for it. Restore the store from a backup, or start it anew in an empty --data-dir',
  );
}

export function partitionDir(parquetDir: string, partition: string): string {
  return join(parquetDir, `date=${checkPartition(partition, 'a day file to write')}`);
}

/** Modes of what session-etl creates, whatever the umask (docs/design.md "What is stored in depth"). */
export const DIR_MODE = 0o750;
export const FILE_MODE = 0o640;

/** Names of the files session-etl writes under .tmp/ and pending/ (without the unguessable end: earlier versions'). */
const RANDOM_PART = `(?:-${UNGUESSABLE})?`;
export const TMP_FILE_NAME = new RegExp(
  `^(?:\\.probe-\\d+${RANDOM_PART}|state\\.json-\\d+|\\.state\\.json\\.${UNGUESSABLE}\\.tmp|rows-\\d{12,}-\\d+-\\d+${RANDOM_PART}\\.ndjson|(?:\\d{4,}-\\d{2}-\\d{2}|__HIVE_DEFAULT_PARTITION__)-\\d+-\\d+${RANDOM_PART}\\.parquet)$`,
);
export const PENDING_FILE_NAME = new RegExp(`^rows-\\d{12,}-\\d+-\\d+${RANDOM_PART}\\.ndjson$`);
/** A partition directory's name under parquet/sessions/. */
export const PARTITION_DIR_NAME = /^date=(?:\d{4,}-\d{2}-\d{2}|__HIVE_DEFAULT_PARTITION__)$/;

/** Refuses (DataDirError) a symbolic link where session-etl keeps its own files; the data directory itself may be one. */
export async function refuseLinks(dataDir: string, shard?: ShardId): Promise<void> {
  const both = layoutOf(dataDir, 'both', shard);
  const parquetOnly = layoutOf(dataDir, 'parquet', shard);
  const paths = [
    ...(both.storeDir !== dataDir ? [dirname(both.storeDir), both.storeDir] : []),
    both.dbPath, `${both.dbPath}.wal`, `${both.dbPath}.tmp`,
    parquetOnly.dbPath, `${parquetOnly.dbPath}.wal`, `${parquetOnly.dbPath}.tmp`,
    both.tmpDir, both.pendingDir, dirname(both.parquetDir), both.parquetDir, both.lockPath,
  ];
  for (const p of paths) await refuseLink(dataDir, p);
  let partitions: Dirent[] = [];
  try {
    partitions = await readdir(both.parquetDir, { withFileTypes: true });
  } catch {
    // No dataset yet (or not a directory: checked where it is used).
  }
  for (const e of partitions) if (e.isSymbolicLink()) await refuseLink(dataDir, join(both.parquetDir, e.name));
}

async function refuseLink(dataDir: string, path: string): Promise<void> {
  let isLink: boolean;
  try {
    isLink = (await lstat(path)).isSymbolicLink();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return;
    throw new DataDirError(`data directory ${dataDir} cannot be used (${code}): ${path} is not reachable; choose another --data-dir`, { cause: err });
  }
  if (!isLink) return;
  const target = await readlink(path).catch(() => '?');
  throw new DataDirError(
    `data directory ${dataDir} cannot be used: ${path} is a symbolic link (to ${target}), and session-etl never follows a link ` +
      'inside its data directory (it would write into, or clean up, what the link points to). Remove the link and let ' +
      'session-etl create the directory, or point --data-dir at the real directory (the data directory itself may be a link)',
  );
}
