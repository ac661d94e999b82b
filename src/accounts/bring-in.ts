/**
 * Before a many-account run fetches, each of its accounts whose data is elsewhere (the layout before
 * schema 3, or the store of another number of shards) is moved into its store (docs/accounts.md): one
 * recorded transaction there, then removal from where it was; a move cut short is finished by the next run, never done twice.
 */
import { mkdir, readdir, rm, rmdir, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { layoutOf, PARTITION_DIR_NAME } from '../store/layout.js';
import { acquireLock } from '../store/lock.js';
import { BucketRun } from '../store/dataset/bucket-run.js';
import { bucketStores, mirrorDataset } from '../store/dataset/bucket-reader.js';
import { SessionStore } from '../store/session-store.js';
import type { Logger } from '../util/logger.js';
import type { TransferSource } from '../store/account-transfer.js';
import { datasetRoot } from './layout.js';
import { legacyAccounts, legacySource, removeLegacyAccount } from './legacy.js';
import { allStores, describeStore, type StoreId } from './stores.js';

const SOURCE_LOCK_WAIT_MS = 15 * 60_000;

export interface MovedAccount {
  account: string;
  from: string;
  sessions: number;
}

export async function bringAccountsIn(store: SessionStore, root: string, mine: StoreId, names: readonly string[], logger: Logger): Promise<MovedAccount[]> {
  const dataset = store.dataset.location;
  const moved: MovedAccount[] = [];
  for (const name of legacyAccounts(root, names)) {
    const src = legacySource(root, name);
    const sessions = await moveIn(store, name, src);
    await removeLegacyAccount(root, name);
    moved.push({ account: name, from: src.describe, sessions });
    logger.info({ account: name, sessions }, `moved account ${name} from the layout before schema 3 into ${describeStore(mine)} (nothing fetched again)`);
  }
  const myCount = mine?.count ?? 1;
  // With the dataset in a bucket, the stores whose state the bucket keeps too (their machines' disks are gone).
  const here = await allStores(root);
  const there = dataset.kind === 's3' ? await bucketStores(dataset) : [];
  const key = (s: StoreId) => (s ? `${s.index}-of-${s.count}` : '');
  const others = [...new Map([...here, ...there].map((s) => [key(s), s])).values()].filter((s) => (s?.count ?? 1) !== myCount);
  for (const other of others) moved.push(...(await moveOutOf(store, root, mine, other, names, logger)));
  return moved;
}

/** Moves the named accounts `other` holds into `store`, then removes them from `other` (and `other` itself once it holds none). */
async function moveOutOf(store: SessionStore, root: string, mine: StoreId, other: StoreId, names: readonly string[], logger: Logger): Promise<MovedAccount[]> {
  const where = layoutOf(root, 'both', other);
  await mkdir(where.storeDir, { recursive: true, mode: 0o750 });
  const command = `moving accounts into ${describeStore(mine)}`;
  const lock = await acquireLock(where.lockPath, { command, wait: true, waitTimeoutMs: SOURCE_LOCK_WAIT_MS });
  const dataset = store.dataset.location;
  // A bucket: the other store's lock there too, and its state brought here from it (its own machine may be gone).
  const bucket =
    dataset.kind === 's3'
      ? await BucketRun.begin(dataset, (f) => layoutOf(root, f, other), { command, runId: `move-${process.pid}-${Date.now()}`, format: undefined, logger, waitMs: SOURCE_LOCK_WAIT_MS })
      : undefined;
  const opened = () => SessionStore.open({ dataDir: root, accounts: 'many', ...(other ? { shard: other } : {}), ...(bucket ? { dataset, format: bucket.format ?? 'parquet', beforeUpload: () => bucket.ensureHeld() } : {}), logger });
  const moved: MovedAccount[] = [];
  let mirror: string | undefined;
  try {
    if (bucket && bucket.format === undefined) return moved; // the bucket keeps no state of it: nothing to move from here
    let src = await opened();
    let held: string[];
    const describe = `${describeStore(other)} (${bucket && dataset.kind === 's3' ? `${dataset.url} ` : ''}${src.layout.dbPath})`;
    let filesGlob = join(datasetRoot(root), 'date=*', src.layout.partitionFile);
    try {
      held = (await src.accountNames()).filter((n) => names.includes(n));
      if (held.length) await src.flush();
      if (held.length && dataset.kind === 's3') {
        // Its day files, read here (DuckDB reads no bucket): a copy of the bucket's.
        mirror = join(src.layout.tmpDir, `move-files-${process.pid}`);
        await mirrorDataset(dataset, mirror);
        filesGlob = join(mirror, 'date=*', src.layout.partitionFile);
      }
    } finally {
      // Closed while this store reads it (DuckDB opens a file once per process).
      await src.close();
    }
    const source = { describe, dbPath: src.layout.dbPath, format: src.format, whole: false, pendingDir: src.layout.pendingDir, filesGlob };
    if (!held.length) return moved;
    for (const name of held) {
      const sessions = await moveIn(store, name, source);
      moved.push({ account: name, from: describe, sessions });
      logger.info({ account: name, sessions }, `moved account ${name} from ${describe} into ${describeStore(mine)} (nothing fetched again)`);
    }
    src = await opened();
    let empty: boolean;
    try {
      await src.removeAccounts(held, filesGlob);
      empty = (await src.accountNames()).length === 0;
      // What the other store's next run continues from, without the accounts moved out.
      if (bucket && !empty) await src.withWriteConnection((c) => bucket.saveState(c, { format: src.format, force: true }));
    } finally {
      await src.close();
    }
    if (empty) {
      await removeStore(root, other);
      await bucket?.forget();
    }
  } finally {
    if (mirror) await rm(mirror, { recursive: true, force: true }).catch(() => {});
    await bucket?.end().catch(() => {});
    await lock.release();
  }
  return moved;
}

/** Moves an account in, unless this store recorded its move from `src` already (a move cut short after it). */
async function moveIn(store: SessionStore, name: string, src: TransferSource): Promise<number> {
  return (await store.movedFrom(name)) === src.describe ? 0 : store.importAccount(name, src);
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
