/**
 * A store's day files in an S3-compatible bucket (`--parquet-url s3://BUCKET/PREFIX`), laid out as
 * parquet/sessions/. Each file is uploaded whole (one PUT, or a multipart upload completed at its end),
 * so a reader sees the old file or the new one, never half; a day stays marked for its rewrite until
 * its upload completed, so a run killed mid-upload leaves it for the next.
 */
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { crashPoint } from '../../util/crash-point.js';
import { unguessable, writeNewStream } from '../../util/temp-file.js';
import { checkPartition, FILE_MODE, isPartition, PARTITION_FILE_NAME, type StoreLayout } from '../layout.js';
import type { Dataset } from './dataset.js';
import { keyOf, type S3Location } from './location.js';
import { bucketError, BucketLockLostError, listObjects, noSuchKey, s3ClientFor } from './s3-client.js';

/** Files larger than this are uploaded in parts (8 MiB each, two at a time): memory stays at ~16 MiB per upload. */
const MULTIPART_BYTES = 16 * 2 ** 20;
const PART_BYTES = 8 * 2 ** 20;

export class S3Dataset implements Dataset {
  readonly describe: string;

  private constructor(
    readonly location: S3Location,
    private readonly client: S3Client,
    private readonly fileName: string,
    private readonly tmpDir: string,
    /** Throws when the run lost its lock (bucket-run.ts). */
    private readonly beforeUpload: () => Promise<void>,
  ) {
    this.describe = location.url;
  }

  static async open(location: S3Location, layout: StoreLayout, beforeUpload: () => Promise<void> = async () => {}): Promise<S3Dataset> {
    return new S3Dataset(location, await s3ClientFor(location), layout.partitionFile, layout.tmpDir, beforeUpload);
  }

  private key(partition: string): string {
    return keyOf(this.location, `date=${checkPartition(partition, 'a day file to upload')}/${this.fileName}`);
  }

  async put(partition: string, localFile: string, rows: number): Promise<void> {
    const { DeleteObjectCommand, PutObjectCommand } = await import('@aws-sdk/client-s3');
    const Key = this.key(partition);
    try {
      await this.beforeUpload();
      if (rows === 0) {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key }));
        return;
      }
      const size = (await stat(localFile)).size;
      crashPoint('mid-parquet-rewrite');
      if (size > MULTIPART_BYTES) {
        const { Upload } = await import('@aws-sdk/lib-storage');
        const upload = new Upload({
          client: this.client,
          params: { Bucket: this.location.bucket, Key, Body: createReadStream(localFile), ContentType: 'application/vnd.apache.parquet' },
          partSize: PART_BYTES,
          queueSize: 2,
          // A multipart upload that fails is aborted: no part is left behind to be billed, and the old object stays.
          leavePartsOnError: false,
        });
        await upload.done();
      } else {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.location.bucket, Key, Body: await readFile(localFile), ContentLength: size, ContentType: 'application/vnd.apache.parquet' }),
        );
      }
      crashPoint('after-parquet-rename');
    } catch (err) {
      if (err instanceof BucketLockLostError) throw err;
      throw bucketError(err, this.location, `writing ${Key}`);
    } finally {
      await rm(localFile, { force: true }).catch(() => {});
    }
  }

  async read(partition: string): Promise<{ path: string; done(): Promise<void> } | null> {
    const Key = this.key(partition);
    const path = join(this.tmpDir, `old-${partition}-${process.pid}-${unguessable()}.parquet`);
    if (!(await downloadTo(this.client, this.location, Key, path))) return null;
    return { path, done: () => rm(path, { force: true }).catch(() => {}) };
  }

  async list(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const o of await listDataset(this.client, this.location)) {
      if (o.file === this.fileName) out.set(o.partition, o.size);
    }
    return out;
  }

  close(): void {
    this.client.destroy();
  }
}

/** Downloads an object to a new file at `path` (mode 0640; EEXIST when anything is there, a link included); false when there is no such object. */
export async function downloadTo(client: S3Client, l: S3Location, Key: string, path: string): Promise<boolean> {
  const { GetObjectCommand } = await import('@aws-sdk/client-s3');
  let body: Readable;
  try {
    body = (await client.send(new GetObjectCommand({ Bucket: l.bucket, Key }))).Body as Readable;
  } catch (err) {
    if (noSuchKey(err)) return false;
    throw bucketError(err, l, `reading ${Key}`);
  }
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o750 });
    // Created here, never through a link planted at the name (util/temp-file.ts).
    await writeNewStream(path, body, FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw err;
    throw bucketError(err, l, `reading ${Key}`);
  }
  return true;
}

type DatasetObject = { key: string; partition: string; file: string; size: number; etag: string };

/** Every day file of the dataset under the prefix (every store's): its day, file name, size and ETag. */
export async function listDataset(client: S3Client, l: S3Location): Promise<DatasetObject[]> {
  const out: DatasetObject[] = [];
  const prefix = keyOf(l, 'date=');
  try {
    for await (const o of listObjects(client, l.bucket, prefix)) {
      const rel = o.Key!.slice(prefix.length - 'date='.length);
      const m = /^date=([^/]+)\/([^/]+)$/.exec(rel);
      // Only our days' files: a key of another shape never reaches a local path or another key.
      if (!m || !isPartition(m[1]) || !PARTITION_FILE_NAME.test(m[2]!)) continue;
      out.push({ key: o.Key!, partition: m[1]!, file: m[2]!, size: Number(o.Size ?? 0), etag: String(o.ETag ?? '') });
    }
  } catch (err) {
    throw bucketError(err, l, 'listing the dataset');
  }
  return out;
}
