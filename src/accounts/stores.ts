/**
 * Which store of a many-account data directory holds an account (docs/accounts.md): the data
 * directory's own (`sessions.duckdb` or `state.duckdb` at its top) when it is not sharded, else
 * shard I of N's under shards/I-of-N/, I being the account's shard (select.ts). N is the one given
 * with --shard, else the one the data directory's shard stores say (1 when it has none).
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/errors.js';
import type { DatasetLocation } from '../store/dataset/location.js';
import { layoutOf, SHARDS_DIR, shardName, type ShardId } from '../store/layout.js';
import { shardOf, type Shard } from './select.js';

/** A store of the data directory: shard I of N (undefined: the top-level one). */
export type StoreId = ShardId | undefined;

/** The shard stores found under shards/ (I-of-N directories). */
export async function shardStores(root: string): Promise<ShardId[]> {
  const names = await readdir(join(root, SHARDS_DIR)).catch(() => [] as string[]);
  return names
    .map((n) => /^(\d{1,6})-of-(\d{1,6})$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) < Number(m[2]))
    .map((m) => ({ index: Number(m[1]), count: Number(m[2]) }))
    .sort((a, b) => a.count - b.count || a.index - b.index);
}

/** Whether the data directory's own (top-level) store exists. */
export function topStoreExists(root: string): boolean {
  return existsSync(layoutOf(root, 'both').dbPath) || existsSync(layoutOf(root, 'parquet').dbPath);
}

/**
 * Every store of the data directory: the top-level one (if any), then the shards'. With the dataset
 * in a bucket and no store here (a fresh machine), the stores whose state the bucket keeps.
 */
export async function allStores(root: string, dataset?: DatasetLocation): Promise<StoreId[]> {
  const here = [...(topStoreExists(root) ? [undefined] : []), ...(await shardStores(root))];
  if (here.length || dataset?.kind !== 's3') return here;
  const { bucketStores } = await import('../store/dataset/bucket-reader.js');
  return bucketStores(dataset);
}

/**
 * The number of shards the accounts are cut into: --shard's N, else the data directory's (the N of
 * its shard stores; 1 without any). Shard stores of several sizes without --shard are refused (exit 2).
 */
export async function shardCount(root: string, given?: Shard): Promise<number> {
  if (given) return given.count;
  const counts = [...new Set((await shardStores(root)).map((s) => s.count))];
  if (counts.length > 1) {
    throw new ConfigError(
      `data directory ${root} holds the stores of ${counts.join(' and ')} shards (${SHARDS_DIR}/): give --shard I/N, and the next run of each ` +
        'shard moves its accounts out of the other stores (docs/accounts.md, "Changing the number of shards")',
    );
  }
  return counts[0] ?? 1;
}

/** The store an account's data belongs in, among `count` shards. */
export function storeFor(name: string, count: number): StoreId {
  return count > 1 ? { index: shardOf(name, count), count } : undefined;
}

/** Accounts grouped by the store they belong in, in the order of `names`. */
export function byStore(names: readonly string[], count: number): Array<{ store: StoreId; names: string[] }> {
  const groups = new Map<string, { store: StoreId; names: string[] }>();
  for (const name of names) {
    const store = storeFor(name, count);
    const key = store ? shardName(store) : '';
    const g = groups.get(key) ?? groups.set(key, { store, names: [] }).get(key)!;
    g.names.push(name);
  }
  return [...groups.values()];
}

export function describeStore(store: StoreId): string {
  return store ? `shard ${store.index} of ${store.count}` : 'the data directory';
}
