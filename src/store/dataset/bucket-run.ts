/**
 * A run's hold on a bucket dataset: the bucket checked before anything is fetched (exit 2), its lock
 * taken, and (format parquet) the state kept in the bucket (bucket-state.ts). The lock: docs/object-storage.md
 * "One writer per prefix"; the state's generations: "The state in the bucket".
 */
import { existsSync } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import type { DuckDBConnection } from '@duckdb/node-api';
import { z } from 'zod';
import { ExitCode } from '../../errors.js';
import type { Logger } from '../../util/logger.js';
import { unguessable, writeFileAtomic } from '../../util/temp-file.js';
import { DataDirError } from '../errors.js';
import type { StoreLayout } from '../layout.js';
import { pidAlive, type LockHolder } from '../lock.js';
import { findRemoteState, LegacyBucketStateError, legacyStateFolder, loadRemoteState, removeState, StateConflictError, stateFolder, uploadState, type RemoteState } from './bucket-state.js';
import type { S3Location } from './location.js';
import { bucketError, BucketLockLostError, BucketWriteError, conditionRefused, noSuchKey, s3ClientFor } from './s3-client.js';

export { BucketLockLostError } from './s3-client.js';

const HEARTBEAT_MS = 20_000;
const STALE_MS = 120_000;
/** The generation of the state last uploaded from this data directory. */
const GENERATION_FILE = '.bucket-generation';

/** Another writer holds the bucket prefix's lock (exit 3, as the data directory's lock). */
export class BucketLockHeldError extends Error {
  override readonly name = 'BucketLockHeldError';
  readonly exitCode = ExitCode.locked;
}

const HolderSchema = z.object({
  pid: z.number().int(),
  host: z.string(),
  startedAt: z.string(),
  command: z.string(),
  runId: z.string().optional(),
  heartbeatAt: z.string().refine((s) => Number.isFinite(Date.parse(s)), 'not a date'),
});
type Holder = z.infer<typeof HolderSchema> & LockHolder;

/** `holder` is null when the object is not one session-etl wrote. */
interface LockObject {
  holder: Holder | null;
  etag: string;
  modifiedMs: number;
  key: string;
}

export interface BucketRunOptions {
  command: string;
  runId: string;
  format: 'duckdb' | 'parquet' | 'both' | undefined;
  logger: Logger;
  /** Wait for a lock another writer holds (--wait), up to this long (ms). */
  waitMs?: number;
  now?: () => number;
  heartbeatMs?: number;
}

export class BucketRun {
  private etag: string | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private lastSave = 0;
  private saving: Promise<void> | undefined;
  /** Set by a refused refresh: every upload after it is refused. */
  private lost: BucketLockLostError | undefined;
  /** The last refresh failed (not refused): the next upload refreshes first. */
  private refreshFailed = false;
  /** The state the bucket kept when this run began, and the ETag its next upload is conditional on. */
  private remote: RemoteState | null = null;
  private manifestEtag: string | undefined;
  conditionalWrites = true;

  /** The format the store opens in: the one asked for, else the data directory's, else parquet when the bucket keeps a state. */
  format: 'duckdb' | 'parquet' | 'both' | undefined;
  private layout!: StoreLayout;

  private constructor(
    readonly location: S3Location,
    private readonly client: S3Client,
    private readonly o: BucketRunOptions,
  ) {
    this.format = o.format;
  }

  /** The store in the bucket's state folders: '' or shards/I-of-N. */
  private get store(): string {
    return this.layout.storeDir === this.layout.dataDir ? '' : this.layout.storeDir.slice(this.layout.dataDir.length + 1);
  }

  private stateKey(name: string): string {
    return `${stateFolder(this.location, this.store)}${name}`;
  }

  /** Checks the bucket, takes its lock, and (format parquet) restores the state when the local copy is missing or older. */
  static async begin(location: S3Location, layoutFor: (format: 'duckdb' | 'parquet' | 'both') => StoreLayout, o: BucketRunOptions): Promise<BucketRun> {
    const client = await s3ClientFor(location);
    const run = new BucketRun(location, client, o);
    try {
      if (o.format === 'duckdb') throw new DataDirError('--parquet-url needs the Parquet dataset: format duckdb writes none (use --format both or parquet)');
      // Where the lock and state live does not depend on the format (the store's directory).
      run.layout = layoutFor('parquet');
      await run.check();
      await run.lock();
      // Format both keeps its state in the data directory: the bucket's is not looked at.
      if (run.format !== 'both') run.remote = await findRemoteState(client, location, run.store);
      if (run.remote?.kind === 'manifest' && run.remote.folder === stateFolder(location, run.store)) run.manifestEtag = run.remote.etag;
      if (run.format === undefined) {
        if (existsSync(layoutFor('parquet').dbPath)) run.format = 'parquet';
        else if (!existsSync(layoutFor('both').dbPath) && run.remote !== null) run.format = 'parquet';
      }
      if (run.format === 'parquet') await run.restore();
      return run;
    } catch (err) {
      await run.end().catch(() => {});
      throw err;
    }
  }

  private async check(): Promise<void> {
    // A listing (not HeadBucket: an answer to HEAD has no body, so no error code to say which it was).
    const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
    try {
      await this.client.send(new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: stateFolder(this.location, '') }));
    } catch (err) {
      throw bucketError(err, this.location, 'listing the bucket', { atStart: true });
    }
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  private holder(): Holder {
    const now = new Date(this.now()).toISOString();
    return { pid: process.pid, host: hostname(), startedAt: now, command: this.o.command, runId: this.o.runId, heartbeatAt: now };
  }

  private async lock(): Promise<void> {
    const Key = this.stateKey('lock.json');
    const legacyKey = `${legacyStateFolder(this.location, this.store)}lock.json`;
    const deadline = Date.now() + (this.o.waitMs ?? 0);
    const waited = async () => {
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 5_000));
      return true;
    };
    const holder = this.holder();
    for (;;) {
      // A writer of an earlier release keeps its lock under the prefix: a fresh one is respected.
      const old = legacyKey !== Key ? await this.readLock(legacyKey) : null;
      // A store that ignores conditional writes overwrites silently: a fresh lock is looked for first.
      const current = await this.readLock(Key);
      const fresh = [current, old].find((l) => l && !this.stale(l) && l.holder?.runId !== this.o.runId);
      if (fresh) {
        if (await waited()) continue;
        throw this.held(fresh);
      }
      const body = JSON.stringify(holder);
      try {
        await this.putLock(Key, body, current ? { IfMatch: current.etag } : { IfNoneMatch: '*' });
      } catch (err) {
        if (conditionRefused(err)) {
          // Taken (or taken over) by another writer in between.
          if (await waited()) continue;
          const now = await this.readLock(Key);
          throw now ? this.held(now) : new BucketLockHeldError(`another writer took the lock of ${this.location.url} at the same time; try again`);
        }
        throw bucketError(err, this.location, `writing the lock ${Key}`, { atStart: true });
      }
      if (current) {
        const was = current.holder ? `its holder stopped refreshing it (pid ${current.holder.pid} on ${current.holder.host})` : 'it was not a lock session-etl wrote, and was not written for 2 minutes';
        this.o.logger.warn({ holder: current.holder }, `took over the lock of ${this.location.url}: ${was}`);
      }
      await this.probeConditionalWrites(Key, body);
      this.heartbeat = setInterval(() => void this.beat(), this.o.heartbeatMs ?? HEARTBEAT_MS);
      this.heartbeat.unref();
      return;
    }
  }

  /** A second create of the lock must be refused; a store that takes it does not honour conditional writes. */
  private async probeConditionalWrites(Key: string, body: string): Promise<void> {
    try {
      await this.putLock(Key, body, { IfNoneMatch: '*' });
      this.conditionalWrites = false;
      this.o.logger.warn(
        { bucket: this.location.bucket },
        `the object store of ${this.location.url} does not honour conditional writes (If-None-Match): one writer per prefix is not enforced by a lock; ` +
          'run one writer at a time (Kubernetes: concurrencyPolicy: Forbid; docs/object-storage.md)',
      );
    } catch (err) {
      if (!conditionRefused(err)) throw bucketError(err, this.location, `writing the lock ${Key}`, { atStart: true });
    }
  }

  private async putLock(Key: string, Body: string, condition: { IfMatch?: string; IfNoneMatch?: string }): Promise<void> {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    this.etag = (await this.client.send(new PutObjectCommand({ Bucket: this.location.bucket, Key, Body, ContentType: 'application/json', ...condition }))).ETag;
  }

  private async readLock(Key: string): Promise<LockObject | null> {
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key }));
      const text = await r.Body!.transformToString();
      let holder: Holder | null = null;
      try {
        holder = HolderSchema.safeParse(JSON.parse(text)).data ?? null;
      } catch {}
      const modifiedMs = r.LastModified instanceof Date ? r.LastModified.getTime() : this.now();
      return { holder, etag: String(r.ETag), modifiedMs, key: Key };
    } catch (err) {
      if (noSuchKey(err)) return null;
      throw bucketError(err, this.location, 'reading the lock', { atStart: true });
    }
  }

  /** Not refreshed for STALE_MS, or held by a gone process of this host (a crash, kill -9: seen at once). */
  private stale(l: LockObject): boolean {
    const now = this.now();
    if (!l.holder) return now - l.modifiedMs > STALE_MS;
    if (l.holder.host === hostname() && !pidAlive(l.holder.pid)) return true;
    return now - Date.parse(l.holder.heartbeatAt) > STALE_MS;
  }

  private held(l: LockObject): BucketLockHeldError {
    const h = l.holder;
    if (!h) {
      return new BucketLockHeldError(
        `the lock of ${this.location.url} (${l.key}) is not one session-etl wrote (not a holder's JSON): it is taken over ` +
          `${Math.round(STALE_MS / 60_000)} minutes after it was last written (${new Date(l.modifiedMs + STALE_MS).toISOString()}); ` +
          'remove it sooner if no run writes the prefix, or pass --wait',
      );
    }
    return new BucketLockHeldError(
      `another session-etl run writes ${this.location.url}: pid ${h.pid} on ${h.host}, ${h.command}, since ${h.startedAt} ` +
        `(its lock ${l.key} was refreshed at ${h.heartbeatAt}). Wait for it to finish, or pass --wait`,
    );
  }

  /** A heartbeat: a refused refresh (412: another writer took the lock over) loses the lock; a failed one is tried again before the next upload. */
  private async beat(): Promise<void> {
    if (this.lost) return;
    try {
      await this.refresh();
    } catch (err) {
      if (err instanceof BucketLockLostError) {
        this.lost = err;
        this.o.logger.error({ bucket: this.location.bucket }, err.message);
      } else this.refreshFailed = true;
    }
  }

  private async refresh(): Promise<void> {
    try {
      const condition = this.conditionalWrites && this.etag ? { IfMatch: this.etag } : {};
      await this.putLock(this.stateKey('lock.json'), JSON.stringify(this.holder()), condition);
    } catch (err) {
      if (conditionRefused(err)) throw this.lostError('its lock was taken over by another writer (the refresh was refused: 412)', err);
      throw err;
    }
    this.refreshFailed = false;
  }

  private lostError(why: string, cause?: unknown): BucketLockLostError {
    return new BucketLockLostError(
      `this run no longer holds the lock of ${this.location.url}: ${why}. It stopped before its next upload, so that another ` +
        "writer's files and state are not overwritten; what it uploaded before stays, and the next run fetches again what it " +
        'committed since its last state upload',
      cause === undefined ? undefined : { cause },
    );
  }

  /** Called before every upload: BucketLockLostError unless this run still holds the lock (after a failed refresh, refreshes first). */
  async ensureHeld(): Promise<void> {
    if (this.lost) throw this.lost;
    if (!this.refreshFailed) return;
    try {
      await this.refresh();
    } catch (err) {
      this.lost = err instanceof BucketLockLostError ? err : this.lostError('its lock could not be refreshed (the object store did not take the refresh)', err);
      throw this.lost;
    }
  }

  private async restore(): Promise<void> {
    const remote = this.remote;
    if (remote === null) return;
    const local = this.layout.dbPath;
    const localGen = await this.localGeneration();
    if (existsSync(local) && localGen === null) {
      throw new DataDirError(
        `${local} and ${this.location.url} both hold a store's state, and the data directory's was not written with this bucket: ` +
          'give the run an empty data directory to continue from the bucket, or another --parquet-url',
      );
    }
    const remoteGen = remote.kind === 'manifest' ? remote.manifest.generation : remote.generation;
    if (existsSync(local) && localGen !== null && localGen >= remoteGen) return;
    // An earlier release's DuckDB file is never opened (it can carry code); its own machine goes on from its own copy.
    if (remote.kind === 'legacy') throw new LegacyBucketStateError(this.location, remote.key);
    const tmp = join(this.layout.storeDir, `.state-from-bucket-${unguessable()}.duckdb`);
    try {
      await loadRemoteState(this.client, this.location, remote, tmp, this.layout.tmpDir);
      await rm(`${local}.wal`, { force: true });
      await rename(tmp, local);
    } finally {
      await rm(tmp, { force: true }).catch(() => {});
    }
    await this.writeGeneration(remoteGen);
    this.o.logger.info({ generation: remoteGen }, `continuing from the state kept in ${this.location.url}`);
  }

  private async localGeneration(): Promise<number | null> {
    try {
      const n = Number((await readFile(join(this.layout.storeDir, GENERATION_FILE), 'utf8')).trim());
      return Number.isFinite(n) ? n : null;
    } catch {
      return null;
    }
  }

  private writeGeneration(n: number): Promise<void> {
    return writeFileAtomic(join(this.layout.storeDir, GENERATION_FILE), `${n}\n`, { mode: 0o640 });
  }

  /**
   * Uploads the store's state (format parquet) as of one view on `conn`, after a complete flush (every
   * day file the state counts is in the bucket), at most once every `minIntervalMs` unless `force`.
   */
  async saveState(conn: DuckDBConnection, o: { format: string; force?: boolean; minIntervalMs?: number }): Promise<void> {
    if (o.format !== 'parquet') return;
    if (!o.force && Date.now() - this.lastSave < (o.minIntervalMs ?? 60_000)) return;
    while (this.saving) await this.saving;
    this.saving = this.upload(conn).finally(() => (this.saving = undefined));
    await this.saving;
  }

  private async upload(conn: DuckDBConnection): Promise<void> {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    await this.ensureHeld();
    const remoteGen = this.remote?.kind === 'manifest' ? this.remote.manifest.generation : this.remote?.generation ?? 0;
    const generation = Math.max((await this.localGeneration()) ?? 0, remoteGen) + 1;
    try {
      this.manifestEtag = await uploadState(this.client, this.location, this.store, conn, {
        generation,
        tmpDir: this.layout.tmpDir,
        manifestEtag: this.manifestEtag,
        conditional: this.conditionalWrites,
      });
    } catch (err) {
      if (err instanceof StateConflictError) {
        this.lost = this.lostError(`the state in the bucket (${err.key}) was written by another writer since this run began`, err);
        throw this.lost;
      }
      if (err instanceof BucketWriteError) throw err;
      throw bucketError(err, this.location, `writing the state under ${stateFolder(this.location, this.store)}`);
    }
    this.remote = null;
    await this.writeGeneration(generation);
    this.lastSave = Date.now();
    // What earlier releases kept under the prefix goes, now that the state is kept beside it.
    await removeState(this.client, this.location, this.store, { legacy: true }).catch(() => {});
    // The snapshot beside it, for readers elsewhere (the dashboard of another machine).
    const snapshot = await readFile(join(this.layout.storeDir, 'state.json')).catch(() => undefined);
    if (snapshot) {
      const Key = this.stateKey('state.json');
      await this.client
        .send(new PutObjectCommand({ Bucket: this.location.bucket, Key, Body: snapshot, ContentLength: snapshot.length, ContentType: 'application/json' }))
        .catch((err: unknown) => {
          throw bucketError(err, this.location, `writing ${Key}`);
        });
    }
  }

  /** Removes the state the bucket keeps for the store (it holds no account any more: accounts/bring-in.ts). */
  async forget(): Promise<void> {
    await removeState(this.client, this.location, this.store);
  }

  /** Releases the lock (when it is still this run's) and the client. */
  async end(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    try {
      if (this.etag) {
        const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
        const current = await this.readLock(this.stateKey('lock.json')).catch(() => null);
        if (current?.holder && current.holder.runId === this.o.runId) {
          await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.stateKey('lock.json') }));
        }
      }
    } finally {
      this.client.destroy();
    }
  }
}
