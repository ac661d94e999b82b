/**
 * Before a many-account run's accounts fetch anything, each one whose data is in another place is
 * moved into the run's store, without fetching it again (docs/accounts.md): from its own store of
 * the layout before schema 3 (accounts/NAME/), or from the store of another number of shards
 * (shards/I-of-M/, or the data directory's own when it was not sharded). Each move is one
 * transaction on this store (recorded there), then the account is removed from where it was; a
 * move cut short by a crash is finished by the next run, never done twice.
 */
import { readdir, rm, rmdir, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { layoutOf, PARTITION_DIR_NAME } from '../store/layout.js';
import { acquireLock } from '../store/lock.js';
import { SessionStore } from '../store/session-store.js';
import type { Logger } from '../util/logger.js';
import { datasetRoot } from './layout.js';
import { legacyAccounts, legacySource, removeLegacyAccount } from './legacy.js';
import { allStores, describeStore, type StoreId } from './stores.js';

/** How long a run waits for another run to release a store it moves accounts out of. */
const SOURCE_LOCK_WAIT_MS = 15 * 60_000;

export interface MovedAccount {
  account: string;
  from: string;
  sessions: number;
}

export async function bringAccountsIn(store: SessionStore, root: string, mine: StoreId, names: readonly string[], logger: Logger): Promise<MovedAccount[]> {
  const moved: MovedAccount[] = [];
  for (const name of legacyAccounts(root, names)) {
    const src = legacySource(root, name);
    const done = (await store.movedFrom(name)) === src.describe;
    const sessions = done ? 0 : await store.importAccount(name, src);
    await removeLegacyAccount(root, name);
    moved.push({ account: name, from: src.describe, sessions });
    logger.info({ account: name, sessions }, `moved account ${name} from the layout before schema 3 into ${describeStore(mine)} (nothing fetched again)`);
  }
  const myCount = mine?.count ?? 1;
  for (const other of (await allStores(root)).filter((s) => (s?.count ?? 1) !== myCount)) {
    moved.push(...(await moveOutOf(store, root, mine, other, names, logger)));
  }
  return moved;
}

/** Moves the named accounts `other` holds into `store`, then removes them from `other` (and `other` itself once it holds none). */
async function moveOutOf(store: SessionStore, root: string, mine: StoreId, other: StoreId, names: readonly string[], logger: Logger): Promise<MovedAccount[]> {
  const where = layoutOf(root, 'both', other);
  const lock = await acquireLock(where.lockPath, {
    command: `moving accounts into ${describeStore(mine)}`,
    wait: true,
    waitTimeoutMs: SOURCE_LOCK_WAIT_MS,
  });
  const moved: MovedAccount[] = [];
  try {
    let src = await SessionStore.open({ dataDir: root, accounts: 'many', ...(other ? { shard: other } : {}), logger });
    let held: string[];
    const describe = `${describeStore(other)} (${src.layout.dbPath})`;
    const source = {
      describe,
      dbPath: src.layout.dbPath,
      format: src.format,
      whole: false,
      pendingDir: src.layout.pendingDir,
      filesGlob: join(datasetRoot(root), 'date=*', src.layout.partitionFile),
    };
    try {
      held = (await src.accountNames()).filter((n) => names.includes(n));
      if (held.length) await src.flush();
    } finally {
      // Closed while this store reads it (DuckDB opens a file once per process).
      await src.close();
    }
    if (held.length) {
      for (const name of held) {
        const done = (await store.movedFrom(name)) === describe;
        const sessions = done ? 0 : await store.importAccount(name, source);
        moved.push({ account: name, from: describe, sessions });
        logger.info({ account: name, sessions }, `moved account ${name} from ${describe} into ${describeStore(mine)} (nothing fetched again)`);
      }
      src = await SessionStore.open({ dataDir: root, accounts: 'many', ...(other ? { shard: other } : {}), logger });
      let empty: boolean;
      try {
        await src.removeAccounts(held);
        empty = (await src.accountNames()).length === 0;
      } finally {
        await src.close();
      }
      if (empty) await removeStore(root, other);
    }
  } finally {
    await lock.release();
  }
  return moved;
}

/** Removes a store that holds no account any more: its files (those session-etl names) and, for a shard, its directory. */
async function removeStore(root: string, store: StoreId): Promise<void> {
  for (const format of ['both', 'parquet'] as const) {
    const l = layoutOf(root, format, store);
    for (const f of [l.dbPath, `${l.dbPath}.wal`]) await unlink(f).catch(() => {});
  }
  const l = layoutOf(root, 'both', store);
  await unlink(join(l.storeDir, 'state.json')).catch(() => {});
  for (const d of [l.tmpDir, l.pendingDir]) await rmdir(d).catch(() => {});
  // Its day files are gone with its last rows (a rewrite without rows removes the file); any left is named.
  for (const d of await readdir(l.parquetDir).catch(() => [] as string[])) {
    if (PARTITION_DIR_NAME.test(d)) await unlink(join(l.parquetDir, d, l.partitionFile)).catch(() => {});
  }
  if (store) {
    await rm(l.lockPath, { recursive: true, force: true });
    await rmdir(l.storeDir).catch(() => {});
    await rmdir(dirname(l.storeDir)).catch(() => {});
  }
}
