/**
 * A run's hold on a bucket dataset (docs/object-storage.md): before anything is fetched, the bucket
 * is checked (credentials, existence, region: a clear error naming the bucket, exit 2, nothing
 * written) and its lock object taken; with format parquet, the state a run needs to continue is kept
 * in the bucket too, so that a run on a fresh machine with an empty data directory continues where
 * the last one stopped.
 *
 * - **The lock**: `<prefix>/_session_etl/[shards/I-of-N/]lock.json`, created with a conditional write
 *   (`If-None-Match: *`): of two writers on one prefix, one gets it and the other exits 3 naming the
 *   holder. The holder refreshes it every HEARTBEAT_MS; one not refreshed for STALE_MS (its pod
 *   died) is taken over with `If-Match` on the stale one's ETag. A store that ignores conditional
 *   writes is detected when the lock is taken (a second conditional write succeeds) and said at
 *   start: then one writer per prefix is only the deployment's rule (Kubernetes: concurrencyPolicy: Forbid).
 * - **The state** (format parquet): the store's DuckDB file, copied consistently (COPY FROM
 *   DATABASE) after each complete flush and at the end, uploaded to `…/state.duckdb` with a
 *   generation number in its metadata. Every day file it counts as written was uploaded before it,
 *   so a machine that restores it never counts a window whose data is not in the bucket; windows
 *   committed after the last upload are fetched again (upserted: nothing counted twice). At start, a
 *   missing or older local copy (the generation in `.bucket-generation`) is replaced by the bucket's.
 */
import { existsSync } from 'node:fs';
import { readFile, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { ExitCode } from '../../errors.js';
import type { Logger } from '../../util/logger.js';
import { unguessable, writeFileAtomic } from '../../util/temp-file.js';
import { queryRows, sqlString } from '../duckdb.js';
import { DataDirError } from '../errors.js';
import type { StoreLayout } from '../layout.js';
import { pidAlive, type LockHolder } from '../lock.js';
import { BUCKET_STATE_DIR, keyOf, type DatasetLocation } from './location.js';
import { bucketError, BucketWriteError, s3ClientFor } from './s3-client.js';
import { downloadTo } from './s3-dataset.js';

type S3Location = Extract<DatasetLocation, { kind: 's3' }>;

const HEARTBEAT_MS = 20_000;
const STALE_MS = 120_000;
/** The generation of the state last uploaded from this data directory (beside the store's DuckDB file). */
const GENERATION_FILE = '.bucket-generation';

/** Another writer holds the bucket prefix's lock (exit 3, as the data directory's lock). */
export class BucketLockHeldError extends Error {
  override readonly name = 'BucketLockHeldError';
  readonly exitCode = ExitCode.locked;
}

interface Holder extends LockHolder {
  heartbeatAt: string;
}

export interface BucketRunOptions {
  command: string;
  runId: string;
  /** The format asked for (--format), if any. */
  format: 'duckdb' | 'parquet' | 'both' | undefined;
  logger: Logger;
  /** Wait for a lock another writer holds (--wait), up to this long (ms). */
  waitMs?: number;
  now?: () => number;
}

export class BucketRun {
  private etag: string | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private lastSave = 0;
  private saving: Promise<void> | undefined;
  /** Whether the store honours conditional writes (the lock is then exclusive). */
  conditionalWrites = true;

  /** The format the store opens in: the one asked for, else the data directory's, else parquet when the bucket keeps a state. */
  format: 'duckdb' | 'parquet' | 'both' | undefined;
  private layout!: StoreLayout;

  private constructor(
    readonly location: S3Location,
    private readonly client: S3Client,
    private readonly layoutFor: (format: 'duckdb' | 'parquet' | 'both') => StoreLayout,
    private readonly o: BucketRunOptions,
  ) {
    this.format = o.format;
  }

  /** The store's folder of state under the prefix: `_session_etl/` (or `_session_etl/shards/I-of-N/`). */
  private stateKey(name: string): string {
    const rel = this.layout.storeDir === this.layout.dataDir ? '' : `${this.layout.storeDir.slice(this.layout.dataDir.length + 1)}/`;
    return keyOf(this.location, `${BUCKET_STATE_DIR}/${rel}${name}`);
  }

  /** Checks the bucket, takes its lock, and (format parquet) brings the state from it when the local copy is missing or older. */
  static async begin(location: S3Location, layoutFor: (format: 'duckdb' | 'parquet' | 'both') => StoreLayout, o: BucketRunOptions): Promise<BucketRun> {
    const client = await s3ClientFor(location);
    const run = new BucketRun(location, client, layoutFor, o);
    try {
      if (o.format === 'duckdb') throw new DataDirError('--parquet-url needs the Parquet dataset: format duckdb writes none (use --format both or parquet)');
      // Where the lock and state live does not depend on the format (the store's directory).
      run.layout = layoutFor('parquet');
      await run.check();
      await run.lock();
      if (run.format === undefined) {
        if (existsSync(layoutFor('parquet').dbPath)) run.format = 'parquet';
        else if (!existsSync(layoutFor('both').dbPath) && (await run.remoteGeneration()) !== null) run.format = 'parquet';
      }
      if (run.format === 'parquet') await run.restore();
      return run;
    } catch (err) {
      await run.end().catch(() => {});
      throw err;
    }
  }

  /** Credentials, existence, region: refused before anything is fetched (exit 2), the bucket unchanged. */
  private async check(): Promise<void> {
    // A listing (not HeadBucket: an answer to HEAD has no body, so no error code to say which it was).
    const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
    try {
      await this.client.send(new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: keyOf(this.location, BUCKET_STATE_DIR) }));
    } catch (err) {
      throw bucketError(err, this.location, 'listing the bucket', true);
    }
  }

  private holder(): Holder {
    const now = new Date((this.o.now ?? Date.now)()).toISOString();
    return { pid: process.pid, host: hostname(), startedAt: now, command: this.o.command, runId: this.o.runId, heartbeatAt: now };
  }

  private async lock(): Promise<void> {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    const Key = this.stateKey('lock.json');
    const deadline = Date.now() + (this.o.waitMs ?? 0);
    const holder = this.holder();
    for (;;) {
      // A store that ignores conditional writes overwrites silently: a fresh lock is looked for first.
      const current = await this.readLock();
      if (current && !this.stale(current.holder) && current.holder.runId !== this.o.runId) {
        if (Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 5_000));
          continue;
        }
        throw this.held(current.holder);
      }
      const body = JSON.stringify(holder);
      try {
        const put = await this.client.send(
          new PutObjectCommand({
            Bucket: this.location.bucket,
            Key,
            Body: body,
            ContentType: 'application/json',
            ...(current ? { IfMatch: current.etag } : { IfNoneMatch: '*' }),
          }),
        );
        this.etag = put.ETag;
      } catch (err) {
        const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status === 412 || status === 409) {
          // Taken (or taken over) by another writer in between.
          if (Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, 5_000));
            continue;
          }
          const now = await this.readLock();
          throw now ? this.held(now.holder) : new BucketLockHeldError(`another writer took the lock of ${this.location.url} at the same time; try again`);
        }
        throw bucketError(err, this.location, `writing the lock ${Key}`, true);
      }
      if (current) this.o.logger.warn({ holder: current.holder }, `took over the lock of ${this.location.url}: its holder stopped refreshing it (pid ${current.holder.pid} on ${current.holder.host})`);
      await this.probeConditionalWrites(Key, body);
      this.heartbeat = setInterval(() => void this.refresh().catch(() => {}), HEARTBEAT_MS);
      this.heartbeat.unref();
      return;
    }
  }

  /** A second create of the lock must be refused; a store that takes it does not honour conditional writes. */
  private async probeConditionalWrites(Key: string, body: string): Promise<void> {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    try {
      const again = await this.client.send(new PutObjectCommand({ Bucket: this.location.bucket, Key, Body: body, ContentType: 'application/json', IfNoneMatch: '*' }));
      this.etag = again.ETag;
      this.conditionalWrites = false;
      this.o.logger.warn(
        { bucket: this.location.bucket },
        `the object store of ${this.location.url} does not honour conditional writes (If-None-Match): one writer per prefix is not enforced by a lock; ` +
          'run one writer at a time (Kubernetes: concurrencyPolicy: Forbid; docs/object-storage.md)',
      );
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status !== 412 && status !== 409) throw bucketError(err, this.location, `writing the lock ${Key}`, true);
    }
  }

  private async readLock(): Promise<{ holder: Holder; etag: string } | null> {
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: this.stateKey('lock.json') }));
      const text = await r.Body!.transformToString();
      return { holder: JSON.parse(text) as Holder, etag: String(r.ETag) };
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return null;
      if (err instanceof SyntaxError) return null;
      throw bucketError(err, this.location, 'reading the lock', true);
    }
  }

  /** Not refreshed for STALE_MS, or held by a process of this host that is gone (a crash, kill -9: seen at once). */
  private stale(h: Holder): boolean {
    if (h.host === hostname() && !pidAlive(h.pid)) return true;
    return (this.o.now ?? Date.now)() - Date.parse(h.heartbeatAt) > STALE_MS;
  }

  private held(h: Holder): BucketLockHeldError {
    return new BucketLockHeldError(
      `another session-etl run writes ${this.location.url}: pid ${h.pid} on ${h.host}, ${h.command}, since ${h.startedAt} ` +
        `(its lock ${this.stateKey('lock.json')} was refreshed at ${h.heartbeatAt}). Wait for it to finish, or pass --wait`,
    );
  }

  private async refresh(): Promise<void> {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    const put = await this.client.send(
      new PutObjectCommand({
        Bucket: this.location.bucket,
        Key: this.stateKey('lock.json'),
        Body: JSON.stringify({ ...this.holder(), heartbeatAt: new Date().toISOString() }),
        ContentType: 'application/json',
        ...(this.conditionalWrites && this.etag ? { IfMatch: this.etag } : {}),
      }),
    );
    this.etag = put.ETag;
  }

  /** The generation of the state kept in the bucket, or null when it keeps none. */
  private async remoteGeneration(): Promise<number | null> {
    const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
    const Key = this.stateKey('state.duckdb');
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key }));
      return Number(head.Metadata?.generation ?? 0);
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name !== 'NotFound' && e.name !== 'NoSuchKey' && e.$metadata?.httpStatusCode !== 404) throw bucketError(err, this.location, `reading ${Key}`, true);
      return null;
    }
  }

  /** The local state when it is missing or older than the bucket's (format parquet). */
  private async restore(): Promise<void> {
    const Key = this.stateKey('state.duckdb');
    const remote = await this.remoteGeneration();
    if (remote === null) return;
    const local = this.layout.dbPath;
    const localGen = await this.localGeneration();
    if (existsSync(local) && localGen === null) {
      throw new DataDirError(
        `${local} and ${this.location.url} both hold a store's state, and the data directory's was not written with this bucket: ` +
          'give the run an empty data directory to continue from the bucket, or another --parquet-url',
      );
    }
    if (existsSync(local) && localGen !== null && localGen >= remote) return;
    const tmp = join(this.layout.storeDir, `.state-from-bucket-${unguessable()}.duckdb`);
    if (!(await downloadTo(this.client, this.location, Key, tmp))) return;
    await rm(`${local}.wal`, { force: true });
    await rename(tmp, local);
    await this.writeGeneration(remote);
    this.o.logger.info({ generation: remote }, `continuing from the state kept in ${this.location.url}`);
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
   * Uploads the store's state (format parquet), as of a consistent copy taken on `conn`. Called
   * after a complete flush (every day file the copy counts is in the bucket), at most once every
   * `minIntervalMs` unless `force`.
   */
  async saveState(conn: import('@duckdb/node-api').DuckDBConnection, o: { format: string; force?: boolean; minIntervalMs?: number }): Promise<void> {
    if (o.format !== 'parquet') return;
    if (!o.force && Date.now() - this.lastSave < (o.minIntervalMs ?? 60_000)) return;
    while (this.saving) await this.saving;
    this.saving = this.upload(conn).finally(() => (this.saving = undefined));
    await this.saving;
  }

  private async upload(conn: import('@duckdb/node-api').DuckDBConnection): Promise<void> {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    const copy = join(this.layout.tmpDir, `state-copy-${process.pid}-${unguessable()}.duckdb`);
    const Key = this.stateKey('state.duckdb');
    try {
      const db = (await queryRows<{ d: string }>(conn, 'SELECT current_database() AS d'))[0]!.d;
      await conn.run(`ATTACH ${sqlString(copy)} AS state_copy`);
      try {
        await conn.run(`COPY FROM DATABASE "${db.replace(/"/g, '""')}" TO state_copy`);
      } finally {
        await conn.run('DETACH state_copy').catch(() => {});
      }
      const generation = ((await this.localGeneration()) ?? 0) + 1;
      const bytes = await readFile(copy);
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.location.bucket,
          Key,
          Body: bytes,
          ContentLength: (await stat(copy)).size,
          Metadata: { generation: String(generation) },
          ContentType: 'application/octet-stream',
        }),
      );
      await this.writeGeneration(generation);
      this.lastSave = Date.now();
      // The snapshot beside it, for readers elsewhere (the dashboard of another machine).
      const snapshot = await readFile(join(this.layout.storeDir, 'state.json')).catch(() => undefined);
      if (snapshot) {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.location.bucket, Key: this.stateKey('state.json'), Body: snapshot, ContentLength: snapshot.length, ContentType: 'application/json' }),
        );
      }
    } catch (err) {
      if (err instanceof BucketWriteError) throw err;
      throw bucketError(err, this.location, `writing the state ${Key}`, false);
    } finally {
      await rm(copy, { force: true }).catch(() => {});
      await rm(`${copy}.wal`, { force: true }).catch(() => {});
    }
  }

  /** Removes the state the bucket keeps for the store (it holds no account any more: accounts/bring-in.ts). */
  async forget(): Promise<void> {
    const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
    for (const name of ['state.duckdb', 'state.json']) {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.stateKey(name) })).catch(() => {});
    }
  }

  /** Releases the lock (when it is still this run's) and the client. */
  async end(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    try {
      if (this.etag) {
        const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
        const current = await this.readLock().catch(() => null);
        if (current && current.holder.runId === this.o.runId) {
          await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.stateKey('lock.json') }));
        }
      }
    } finally {
      this.client.destroy();
    }
  }
}
