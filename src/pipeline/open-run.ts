/**
 * A run's hold on its data directory: the directory made (never through a link), the lock, the store
 * opened (waiting while a reader holds the DuckDB file); at the end, the store closed, what a first
 * run that committed nothing created removed again, and the lock released.
 */
import { rmdir, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DataDirError, StoreBusyError } from '../store/errors.js';
import { DIR_MODE, layoutOf, refuseLinks, type OutputFormat } from '../store/layout.js';
import { acquireLock, type Lock } from '../store/lock.js';
import { makeDirs, MakeDirsError } from '../store/make-dirs.js';
import { checkWriterSettings, discardNew, SessionStore } from '../store/session-store.js';
import { STATE_FILE } from '../store/state-snapshot.js';
import { formatDuration } from '../time/windows.js';
import type { Logger } from '../util/logger.js';
import { realSleep } from '../util/sleep.js';
import { RunInterruptedError } from './errors.js';
import type { ResolvedBatch } from './options.js';
import type { BucketRun } from '../store/dataset/bucket-run.js';

export interface OpenedRun {
  store: SessionStore;
  lock: Lock | undefined;
  /** The hold on a bucket dataset (its lock, and with format parquet its copy of the state). */
  bucket?: BucketRun;
  /** The first directory makeDir created, if any (removed again with a store that holds nothing). */
  dirCreated: string | undefined;
}

/** Takes the store for a run: checks, lock (unless the caller holds it), store. `command` names the holder. */
export async function openRun(opts: ResolvedBatch, command: string, runId: string, logger: Logger): Promise<OpenedRun> {
  checkWriterSettings();
  let lock: Lock | undefined;
  let dirCreated: string | undefined;
  const layout = layoutOf(opts.dataDir, 'both', opts.shard);
  if (opts.lock !== false) {
    dirCreated = await makeDir(opts.dataDir, 'data directory');
    // Before the lock: its directory must not be a link either.
    await refuseLinks(opts.dataDir, opts.shard).catch(async (err: unknown) => {
      await removeEmptyDirs(opts.dataDir, dirCreated);
      throw err;
    });
    // A shard's store directory (shards/I-of-N/), made before its lock is taken there.
    if (layout.storeDir !== opts.dataDir) await makeDir(layout.storeDir, "the shard's store directory");
    // wait, waitTimeoutMs and onWait as the caller gave them.
    lock = await acquireLock(layout.lockPath, { ...opts.lock, command, runId, signal: opts.stopSignal });
  }
  let bucket: BucketRun | undefined;
  try {
    let format = opts.format;
    if (opts.dataset?.kind === 's3') {
      const { BucketRun } = await import('../store/dataset/bucket-run.js');
      bucket = await BucketRun.begin(opts.dataset, (f: OutputFormat) => layoutOf(opts.dataDir, f, opts.shard), {
        command,
        runId,
        format,
        logger,
        ...(opts.lock && opts.lock.wait ? { waitMs: opts.lock.waitTimeoutMs ?? 6 * 3600_000 } : {}),
      });
      format = bucket.format;
    }
    const held = bucket;
    const store = await openWhenFree({ ...opts, ...(format ? { format } : {}) }, logger, held ? () => held.ensureHeld() : undefined);
    return { store, lock, dirCreated, ...(bucket ? { bucket } : {}) };
  } catch (err) {
    await bucket?.end().catch(() => {});
    await lock?.release();
    await removeEmptyDirs(opts.dataDir, dirCreated);
    throw err;
  }
}

/**
 * Ends a run's hold. A new store whose run did not succeed and committed nothing holds nothing worth
 * keeping (a wrong key, say): what this run created goes again. Data of any earlier run is never touched.
 * Returns whether it did so.
 */
export async function closeRun(run: OpenedRun, opts: ResolvedBatch, succeeded: boolean): Promise<boolean> {
  const { store } = run;
  const discard = !succeeded && store.created.length > 0 && (await store.allCoverage().then((c) => c.size === 0, () => false));
  let saveFailed: unknown;
  if (run.bucket && !discard) {
    // The state a fresh machine continues from (format parquet): whatever the run's outcome, it is
    // consistent with the bucket's files (rows not written yet wait in it).
    await store.withWriteConnection((c) => run.bucket!.saveState(c, { format: store.format, force: true })).catch((err: unknown) => (saveFailed = err));
  }
  await store.close();
  await run.bucket?.end().catch(() => {});
  if (discard) {
    // The snapshot this run published describes a store that is gone.
    await unlink(join(store.layout.storeDir, STATE_FILE)).catch(() => {});
    await discardNew(store.created);
  }
  await run.lock?.release();
  if (discard) await removeEmptyDirs(opts.dataDir, run.dirCreated);
  if (saveFailed !== undefined) throw saveFailed;
  return discard;
}

/** Without --wait, how long a run tries to open a DuckDB file another process holds: a `status`'s moment, not a BI tool's hold. */
const STORE_BUSY_GRACE_MS = 3_000;
const STORE_BUSY_POLL_MS = 500;

/** Opens the store, waiting while another process holds the DuckDB file; StoreBusyError (exit 3) naming the holder when still held. */
async function openWhenFree(opts: ResolvedBatch, logger: Logger, beforeUpload?: () => Promise<void>): Promise<SessionStore> {
  const lock = opts.lock || undefined;
  const deadline = Date.now() + (lock?.wait ? (lock.waitTimeoutMs ?? Infinity) : STORE_BUSY_GRACE_MS);
  let told = false;
  for (;;) {
    try {
      return await SessionStore.open({
        dataDir: opts.dataDir,
        format: opts.format,
        logger,
        accounts: opts.accounts,
        ...(opts.shard ? { shard: opts.shard } : {}),
        ...(opts.dataset ? { dataset: opts.dataset } : {}),
        ...(beforeUpload ? { beforeUpload } : {}),
        ...(opts.memory ? { memoryLimit: opts.memory.duckdbMemoryLimit, rowGroupBytes: opts.memory.rowGroupBytes, parquetRewrites: opts.memory.parquetRewrites } : {}),
      });
    } catch (err) {
      if (err instanceof StoreBusyError && opts.stopSignal?.aborted) {
        throw new RunInterruptedError(`stopped while waiting for ${err.holder} to close the DuckDB file; nothing was written`, opts.stopExitCode());
      }
      if (!(err instanceof StoreBusyError) || Date.now() >= deadline) {
        if (err instanceof StoreBusyError && lock?.wait) {
          const waited = formatDuration(Math.max(1, Math.round((lock.waitTimeoutMs ?? 0) / 1000)));
          const text =
            `The DuckDB file in ${opts.dataDir} is still held open by ${err.holder}${err.byReader ? ', a reader,' : ''} ` +
            `after waiting ${waited} (--wait-timeout): close that connection, or give a longer --wait-timeout` +
            (err.byReader ? '; point BI tools at the Parquet dataset (parquet/sessions/), which a run never locks' : '');
          throw new StoreBusyError(text, { cause: err, holder: err.holder, byReader: err.byReader, pid: err.pid });
        }
        throw err;
      }
      if (!told && lock?.wait) {
        told = true;
        logger.warn({ holder: err.holder, reader: err.byReader }, 'the DuckDB file is held by another process: waiting for it to close');
        lock.onStoreBusy?.(err);
      }
      await realSleep(STORE_BUSY_POLL_MS, opts.stopSignal).catch(() => {});
    }
  }
}

/**
 * Makes `dir` when missing; returns the first directory it created, if any. Fails saying why in
 * words, with no cause kept: the system's own ("no such file or directory" for /proc/foo) would mislead.
 */
async function makeDir(dir: string, what: string): Promise<string | undefined> {
  try {
    return await makeDirs(dir, DIR_MODE);
  } catch (err) {
    const { code, at } = err instanceof MakeDirsError ? err : { code: (err as NodeJS.ErrnoException).code ?? 'EIO', at: dir };
    const why =
      code === 'EACCES' || code === 'EROFS' || code === 'EPERM'
        ? `${dirname(at)} is not writable`
        : code === 'ENOTDIR' || code === 'EEXIST'
          ? `${at} is a file, not a directory`
          : code === 'ENOENT'
            ? `${dirname(at)} does not accept new directories (a special file system such as /proc or /sys?)`
            : `${at}: ${code}`;
    throw new DataDirError(`${what} ${dir} cannot be created: ${why}; choose another --data-dir`);
  }
}

/** Removes `dir` and its parents up to `top` (the directories makeDir created), each only if empty. */
async function removeEmptyDirs(dir: string, top: string | undefined): Promise<void> {
  if (top === undefined) return;
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (!(await rmdir(d).then(() => true, () => false))) return;
    if (d === resolve(top) || dirname(d) === d) return;
  }
}
