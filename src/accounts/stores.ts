/**
 * Which store of a many-account data directory holds an account (docs/accounts.md): its top-level one
 * when not sharded, else shards/I-of-N/, I the account's shard and N --shard's or the stores' (1 without any).
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
async function shardStores(root: string): Promise<ShardId[]> {
  const names = await readdir(join(root, SHARDS_DIR)).catch(() => [] as string[]);
  return names
    .map((n) => /^(\d{1,6})-of-(\d{1,6})$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) < Number(m[2]))
    .map((m) => ({ index: Number(m[1]), count: Number(m[2]) }))
    .sort((a, b) => a.count - b.count || a.index - b.index);
}

export function topStoreExists(root: string): boolean {
  return existsSync(layoutOf(root, 'both').dbPath) || existsSync(layoutOf(root, 'parquet').dbPath);
}

/** Every store of the data directory, the top-level one first; none here and a bucket: those whose state it keeps. */
export async function allStores(root: string, dataset?: DatasetLocation): Promise<StoreId[]> {
  const here = [...(topStoreExists(root) ? [undefined] : []), ...(await shardStores(root))];
  if (here.length || dataset?.kind !== 's3') return here;
  const { bucketStores } = await import('../store/dataset/bucket-reader.js');
  return bucketStores(dataset);
}

/** --shard's N, else the N of the data directory's shard stores (1 without any; several Ns are refused). */
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

/**
 * The accounts the data directory's stores hold (read-only, or from a busy store's snapshot), sorted;
 * null for one account's store or none. Without an accounts map, a command shows or refuses these, never an empty store.
 */
export async function heldAccounts(root: string, dataset?: DatasetLocation): Promise<string[] | null> {
  const { SessionStore } = await import('../store/session-store.js');
  const { StoreBusyError } = await import('../store/errors.js');
  const { readStateSnapshot } = await import('../store/state-snapshot.js');
  const stores = await allStores(root, dataset).catch(() => [] as StoreId[]);
  // A bucket's stores are read from their copies by status itself; here, only the stores on this machine.
  const local = stores.filter((s) => existsSync(layoutOf(root, 'both', s).dbPath) || existsSync(layoutOf(root, 'parquet', s).dbPath));
  if (!local.length) return stores.some((s) => s !== undefined) ? [] : null;
  const names = new Set<string>();
  let many = local.some((s) => s !== undefined);
  for (const s of local) {
    try {
      const store = await SessionStore.open({ dataDir: root, readOnly: true, ...(s ? { shard: s } : {}) });
      try {
        if (store.accounts !== 'many') continue;
        many = true;
        for (const a of await store.accountNames()) names.add(a);
      } finally {
        await store.close();
      }
    } catch (err) {
      if (!(err instanceof StoreBusyError)) throw err;
      const snapshot = await readStateSnapshot(layoutOf(root, 'both', s).storeDir);
      if (!snapshot?.accounts) continue;
      many = true;
      for (const a of snapshot.accounts) names.add(a.account);
    }
  }
  return many ? [...names].filter((n) => n !== '').sort() : null;
}

/**
 * Refuses (exit 2), naming its accounts, a many-account data directory to a command given no accounts
 * map that shows one account's store (`what`: the account it needs) or runs on it (`schedule`: null).
 */
export async function refuseHeldAccounts(root: string, what: string | null, dataset?: DatasetLocation): Promise<void> {
  const held = await heldAccounts(root, dataset);
  if (held === null) return;
  const shown = held.slice(0, 10).join(', ') + (held.length > 10 ? `, and ${held.length - 10} more` : '');
  throw new ConfigError(
    `data directory ${root} holds many accounts (${shown || 'none with data yet'}), and the configuration has no accounts map: ` +
      `give the configuration file with the accounts (--config)${what !== null ? ` and --account NAME for ${what}` : ''}, or another --data-dir`,
  );
}
