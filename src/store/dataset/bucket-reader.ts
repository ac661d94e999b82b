/**
 * Reading a bucket dataset from this machine (`status`, `sessions --source parquet`, the
 * dashboard): DuckDB cannot read s3:// here (its httpfs extension is a download session-etl never
 * makes), so the dataset is mirrored into a local cache — only the objects that changed since the
 * last mirror (by ETag and size), the ones gone removed — and read there. The state a run keeps in
 * the bucket (format parquet) is read from a DuckDB file made here from its rows (bucket-state.ts).
 */
import { mkdir, readFile, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { refuseSharedDirectory, unguessable, writeFileAtomic } from '../../util/temp-file.js';
import { findRemoteState, LegacyBucketStateError, legacyStateFolder, loadRemoteState, stateFolder } from './bucket-state.js';
import type { DatasetLocation } from './location.js';
import { s3ClientFor } from './s3-client.js';
import { downloadTo, listDataset } from './s3-dataset.js';

type S3Location = Extract<DatasetLocation, { kind: 's3' }>;

/** Where a data directory keeps its copies of a bucket's objects. */
export function bucketCacheDir(dataDir: string): string {
  return join(dataDir, '.cache', 'bucket');
}

const MANIFEST = '.manifest.json';

/**
 * Brings `cacheRoot` (the dataset's layout: date=…/part-….parquet) in line with the bucket's day
 * files; returns how many files were downloaded and how many there are.
 */
export async function mirrorDataset(l: S3Location, cacheRoot: string): Promise<{ downloaded: number; files: number }> {
  // The copy and the directories above it, up to the data directory: others must not be able to plant links there.
  for (const dir of [dirname(dirname(dirname(cacheRoot))), dirname(dirname(cacheRoot)), dirname(cacheRoot), cacheRoot]) await refuseSharedDirectory(dir, 'directory of the bucket\'s local copy');
  const client = await s3ClientFor(l);
  try {
    await mkdir(cacheRoot, { recursive: true, mode: 0o750 });
    let manifest: Record<string, string> = {};
    try {
      manifest = JSON.parse(await readFile(join(cacheRoot, MANIFEST), 'utf8')) as Record<string, string>;
    } catch {
      // a first mirror
    }
    const objects = await listDataset(client, l);
    const next: Record<string, string> = {};
    let downloaded = 0;
    for (const o of objects) {
      const rel = `date=${o.partition}/${o.file}`;
      const version = `${o.etag}:${o.size}`;
      next[rel] = version;
      if (manifest[rel] === version) continue;
      const tmp = join(cacheRoot, `.${unguessable()}.part`);
      if (!(await downloadTo(client, l, o.key, tmp))) continue;
      await mkdir(join(cacheRoot, `date=${o.partition}`), { recursive: true, mode: 0o750 });
      await rename(tmp, join(cacheRoot, rel));
      downloaded++;
    }
    for (const rel of Object.keys(manifest)) {
      if (next[rel] !== undefined) continue;
      await rm(join(cacheRoot, rel), { force: true });
      await rmdir(join(cacheRoot, rel.split('/')[0]!)).catch(() => {});
    }
    // Files of an earlier mirror that no manifest names (a mirror cut short) are dropped too.
    for (const d of await readdir(cacheRoot).catch(() => [] as string[])) {
      if (!d.startsWith('date=')) continue;
      for (const f of await readdir(join(cacheRoot, d)).catch(() => [] as string[])) if (next[`${d}/${f}`] === undefined) await rm(join(cacheRoot, d, f), { force: true });
    }
    await writeFileAtomic(join(cacheRoot, MANIFEST), JSON.stringify(next), { mode: 0o640 });
    return { downloaded, files: objects.length };
  } finally {
    client.destroy();
  }
}

/** The day files of the bucket (every store's), with their sizes: what `status` counts. */
export async function bucketDatasetSize(l: S3Location): Promise<{ count: number; bytes: number }> {
  const client = await s3ClientFor(l);
  try {
    const objects = await listDataset(client, l);
    return { count: objects.length, bytes: objects.reduce((n, o) => n + o.size, 0) };
  } finally {
    client.destroy();
  }
}

/**
 * A copy of the state kept in the bucket for a store (`store`: '' or shards/I-of-N) at `path`:
 * `state.json` (the snapshot, validated as it is read), or `state.duckdb`, a DuckDB file made here
 * from the state's rows (bucket-state.ts; never one downloaded). False when the bucket keeps none.
 */
export async function copyBucketState(l: S3Location, store: string, name: 'state.duckdb' | 'state.json', path: string): Promise<boolean> {
  const client = await s3ClientFor(l);
  try {
    if (name === 'state.json') {
      for (const folder of new Set([stateFolder(l, store), legacyStateFolder(l, store)])) if (await downloadTo(client, l, `${folder}state.json`, path)) return true;
      return false;
    }
    // A writer may replace the state while it is read (its older objects go once the new manifest is
    // up): read again once when the manifest moved on.
    for (let attempt = 0; ; attempt++) {
      const remote = await findRemoteState(client, l, store);
      if (remote === null) return false;
      if (remote.kind === 'legacy') throw new LegacyBucketStateError(l, remote.key);
      try {
        await loadRemoteState(client, l, remote, path, dirname(path));
        return true;
      } catch (err) {
        const now = attempt === 0 ? await findRemoteState(client, l, store).catch(() => null) : null;
        if (now?.kind !== 'manifest' || now.manifest.generation === remote.manifest.generation) throw err;
      }
    }
  } finally {
    client.destroy();
  }
}

/**
 * The stores whose state a bucket keeps (format parquet): the top-level one (undefined) and shards',
 * as their manifests say (`…/[shards/I-of-N/]state/manifest.json`), or an earlier release's `state.duckdb`.
 */
export async function bucketStores(l: S3Location): Promise<Array<{ index: number; count: number } | undefined>> {
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const client = await s3ClientFor(l);
  try {
    const found = new Map<string, { index: number; count: number } | undefined>();
    for (const [prefix, file] of [
      [stateFolder(l, ''), 'state/manifest.json'],
      [legacyStateFolder(l, ''), 'state.duckdb'],
    ] as const) {
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: l.bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }));
        for (const o of page.Contents ?? []) {
          const rel = o.Key!.slice(prefix.length);
          if (rel === file) found.set('', undefined);
          const m = /^shards\/(\d{1,6})-of-(\d{1,6})\/(.+)$/.exec(rel);
          if (m && m[3] === file) found.set(`${m[1]}-of-${m[2]}`, { index: Number(m[1]), count: Number(m[2]) });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    }
    return [...found.entries()].sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))).map(([, s]) => s);
  } finally {
    client.destroy();
  }
}
