/**
 * Reading a bucket dataset from this machine: DuckDB cannot read s3:// here (its httpfs extension is a
 * download session-etl never makes), so the dataset is mirrored into a local cache (only the objects
 * whose ETag or size changed) and read there; the state, from a DuckDB file made here (bucket-state.ts).
 */
import { mkdir, readFile, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { refuseSharedDirectory, unguessable, writeFileAtomic } from '../../util/temp-file.js';
import { findRemoteState, LegacyBucketStateError, legacyStateFolder, loadRemoteState, stateFolder } from './bucket-state.js';
import type { S3Location } from './location.js';
import { listObjects, withS3Client } from './s3-client.js';
import { downloadTo, listDataset } from './s3-dataset.js';

export function bucketCacheDir(dataDir: string): string {
  return join(dataDir, '.cache', 'bucket');
}

const MANIFEST = '.manifest.json';

/** Brings `cacheRoot` in line with the bucket's day files; `files` and `bytes` are what bucketDatasetSize would list. */
export async function mirrorDataset(l: S3Location, cacheRoot: string): Promise<{ downloaded: number; files: number; bytes: number }> {
  // The copy and the directories above it, up to the data directory: others must not be able to plant links there.
  for (const dir of [dirname(dirname(dirname(cacheRoot))), dirname(dirname(cacheRoot)), dirname(cacheRoot), cacheRoot]) await refuseSharedDirectory(dir, 'directory of the bucket\'s local copy');
  return withS3Client(l, async (client) => {
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
    return { downloaded, files: objects.length, bytes: objects.reduce((n, o) => n + o.size, 0) };
  });
}

/** The day files of the bucket (every store's), with their sizes: what `status` counts. */
export async function bucketDatasetSize(l: S3Location): Promise<{ count: number; bytes: number }> {
  return withS3Client(l, async (client) => {
    const objects = await listDataset(client, l);
    return { count: objects.length, bytes: objects.reduce((n, o) => n + o.size, 0) };
  });
}

/**
 * A copy at `path` of the state the bucket keeps for `store`: `state.json` (the snapshot), or
 * `state.duckdb`, made here from the state's rows (never one downloaded). False when there is none.
 */
export async function copyBucketState(l: S3Location, store: string, name: 'state.duckdb' | 'state.json', path: string): Promise<boolean> {
  return withS3Client(l, async (client) => {
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
  });
}

/**
 * The stores whose state a bucket keeps (format parquet): the top-level one (undefined) and shards',
 * as their manifests say (`…/[shards/I-of-N/]state/manifest.json`), or an earlier release's `state.duckdb`.
 */
export async function bucketStores(l: S3Location): Promise<Array<{ index: number; count: number } | undefined>> {
  return withS3Client(l, async (client) => {
    const found = new Map<string, { index: number; count: number } | undefined>();
    for (const [prefix, file] of [
      [stateFolder(l, ''), 'state/manifest.json'],
      [legacyStateFolder(l, ''), 'state.duckdb'],
    ] as const) {
      for await (const o of listObjects(client, l.bucket, prefix)) {
        const rel = o.Key!.slice(prefix.length);
        if (rel === file) found.set('', undefined);
        const m = /^shards\/(\d{1,6})-of-(\d{1,6})\/(.+)$/.exec(rel);
        if (m && m[3] === file) found.set(`${m[1]}-of-${m[2]}`, { index: Number(m[1]), count: Number(m[2]) });
      }
    }
    return [...found.entries()].sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))).map(([, s]) => s);
  });
}
