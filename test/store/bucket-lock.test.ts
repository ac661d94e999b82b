/**
 * The bucket's lock (issue 38, MEDIUM 2 and LOW): a writer that lost it stops before its next
 * upload, the state is uploaded conditionally on what the run read at start, and a lock object
 * that is not one session-etl wrote never crashes a run nor holds a prefix for ever. Against a real
 * S3 server on loopback (s3rver behind test/helpers/s3-server.ts, which decides conditional writes
 * as S3 does and refuses one writer's lock refreshes on demand).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BucketLockHeldError, BucketLockLostError, BucketRun } from '../../src/store/dataset/bucket-run.js';
import { copyBucketState } from '../../src/store/dataset/bucket-reader.js';
import { parseParquetUrl } from '../../src/store/dataset/location.js';
import { S3Dataset } from '../../src/store/dataset/s3-dataset.js';
import { layoutOf, type OutputFormat } from '../../src/store/layout.js';
import { acquireLock } from '../../src/store/lock.js';
import { SessionStore } from '../../src/store/session-store.js';
import { silentLogger } from '../../src/util/logger.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { startS3, type S3TestServer } from '../helpers/s3-server.js';

let s3: S3TestServer;
let root: string;
const saved = { ...process.env };
beforeAll(async () => {
  s3 = await startS3();
  Object.assign(process.env, s3.env, { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
  root = await mkdtemp(join(tmpdir(), 'session-etl-bucket-lock-'));
});
afterAll(async () => {
  for (const k of Object.keys(s3?.env ?? {})) if (saved[k] === undefined) delete process.env[k];
  await s3?.close();
  await rm(root, { recursive: true, force: true });
});

function client(): S3Client {
  return new S3Client({ endpoint: s3.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
}

async function etagOf(Key: string): Promise<string | null> {
  const c = client();
  try {
    return String((await c.send(new HeadObjectCommand({ Bucket: 'lake', Key }))).ETag);
  } catch {
    return null;
  } finally {
    c.destroy();
  }
}

const begin = (url: string, dir: string, runId: string, o: { heartbeatMs?: number; now?: () => number } = {}) =>
  BucketRun.begin(parseParquetUrl(url, true) as Extract<ReturnType<typeof parseParquetUrl>, { kind: 's3' }>, (f: OutputFormat) => layoutOf(dir, f), {
    command: `test ${runId}`,
    runId,
    format: 'parquet',
    logger: silentLogger,
    ...o,
  });

const openStore = async (dir: string, url: string) => {
  await mkdir(dir, { recursive: true });
  return SessionStore.open({ dataDir: dir, format: 'parquet', dataset: parseParquetUrl(url, true) });
};

/** Two minutes and more later: every lock written now looks stale. */
const later = () => Date.now() + 200_000;

describe('the bucket lock', () => {
  it('a writer whose refreshes fail and whose lock is taken over stops before its next upload (exit 3); the new holder\'s state is never overwritten', async () => {
    const url = 's3://lake/lost';
    const dirA = join(root, 'a');
    const dirB = join(root, 'b');
    const storeA = await openStore(dirA, url);
    const a = await begin(url, dirA, 'run-a', { heartbeatMs: 50 });
    // A's refreshes fail (its PUTs of the lock refused), long enough for B to find the lock stale.
    s3.refusePuts((path, body) => path.includes('/lock.json') && body.includes('"runId":"run-a"'));
    const refused = () => s3.requests.some((r) => r.method === 'PUT' && r.path.includes('/lock.json') && r.status === 403);
    for (let i = 0; i < 200 && !refused(); i++) await new Promise((r) => setTimeout(r, 20));
    expect(refused()).toBe(true);
    const b = await begin(url, dirB, 'run-b', { now: later });
    s3.refusePuts(undefined);
    try {
      // A's next upload, a day file: refused before anything is sent.
      const dataset = await S3Dataset.open(a.location, layoutOf(dirA, 'parquet'), () => a.ensureHeld());
      const file = join(dirA, '.tmp', 'day.parquet');
      await writeFile(file, 'not sent');
      const put = dataset.put('2026-01-05', file, 10);
      await expect(put).rejects.toBeInstanceOf(BucketLockLostError);
      await expect(put).rejects.toMatchObject({ exitCode: 3, message: expect.stringMatching(/no longer holds the lock of s3:\/\/lake\/lost: its lock was taken over by another writer/) });
      dataset.close();
      expect(await etagOf('lost/date=2026-01-05/part-0.parquet')).toBeNull();

      // B's state is in the bucket; A's upload of its own is refused, B's left as it was.
      const storeB = await openStore(dirB, url);
      await storeB.withWriteConnection((c) => b.saveState(c, { format: 'parquet', force: true }));
      await storeB.close();
      const manifest = '_session_etl/lost/state/manifest.json';
      const before = await etagOf(manifest);
      expect(before).not.toBeNull();
      await expect(storeA.withWriteConnection((c) => a.saveState(c, { format: 'parquet', force: true }))).rejects.toBeInstanceOf(BucketLockLostError);
      expect(await etagOf(manifest)).toBe(before);
    } finally {
      await storeA.close();
      await a.end();
      await b.end();
    }
  });

  it('the state is written with If-None-Match when the run found none, If-Match on what it read: a state another writer uploaded meanwhile is never overwritten', async () => {
    const url = 's3://lake/conditional';
    const dirA = join(root, 'ca');
    const dirB = join(root, 'cb');
    const storeA = await openStore(dirA, url);
    // A never refreshes (its heartbeat far away): it does not know its lock was taken over.
    const a = await begin(url, dirA, 'run-ca', { heartbeatMs: 3_600_000 });
    const b = await begin(url, dirB, 'run-cb', { now: later });
    try {
      const storeB = await openStore(dirB, url);
      await storeB.withWriteConnection((c) => b.saveState(c, { format: 'parquet', force: true }));
      await storeB.close();
      const manifest = '_session_etl/conditional/state/manifest.json';
      const before = await etagOf(manifest);
      const save = storeA.withWriteConnection((c) => a.saveState(c, { format: 'parquet', force: true }));
      await expect(save).rejects.toBeInstanceOf(BucketLockLostError);
      await expect(save).rejects.toThrow(/the state in the bucket \(s3:\/\/lake\/_session_etl\/conditional\/state\/manifest\.json\) was written by another writer since this run began/);
      expect(await etagOf(manifest)).toBe(before);
      expect(s3.requests.some((r) => r.path.includes('conditional/state/manifest.json') && r.status === 412)).toBe(true);
      // B's state is whole: none of its objects was overwritten by A's (of the same generation number).
      expect(await copyBucketState(b.location, '', 'state.duckdb', join(root, 'conditional-check.duckdb'))).toBe(true);
    } finally {
      await storeA.close();
      await a.end();
      await b.end();
    }
  });

  it.each([
    ['not JSON', '{"pid": 1, "host": "x"'],
    ['null', 'null'],
    ['a heartbeat that is not a date', JSON.stringify({ pid: 1, host: 'elsewhere', startedAt: 'x', command: 'x', runId: 'x', heartbeatAt: 'soon' })],
  ])('a lock object that is %s: held while it is fresh (saying what to do), taken over two minutes after it was written; never a crash', async (_what, body) => {
    const url = `s3://lake/tampered-${Math.random().toString(36).slice(2, 8)}`;
    const name = url.slice('s3://lake/'.length);
    const c = client();
    await c.send(new PutObjectCommand({ Bucket: 'lake', Key: `_session_etl/${name}/lock.json`, Body: body }));
    c.destroy();
    const dir = join(root, name);
    const fresh = begin(url, dir, 'run-t');
    await expect(fresh).rejects.toBeInstanceOf(BucketLockHeldError);
    await expect(fresh).rejects.toThrow(/is not one session-etl wrote \(not a holder's JSON\): it is taken over 2 minutes after it was last written/);
    const run = await begin(url, dir, 'run-t', { now: later });
    try {
      const c2 = client();
      const got = await c2.send(new GetObjectCommand({ Bucket: 'lake', Key: `_session_etl/${name}/lock.json` }));
      expect(JSON.parse(await got.Body!.transformToString())).toMatchObject({ runId: 'run-t' });
      c2.destroy();
    } finally {
      await run.end();
    }
  });

  it.each([['null'], ['"a string"'], ['{"pid": "x", "host": 5}'], ['not json']])('a data directory lock whose holder file is %s is taken over, never a crash', async (body) => {
    const dir = await mkdtemp(join(root, 'local-'));
    const path = join(dir, '.session-etl.lock');
    await mkdir(path);
    await writeFile(join(path, 'holder.json'), body);
    const lock = await acquireLock(path, { command: 'test' });
    await lock.release();
  });
});
