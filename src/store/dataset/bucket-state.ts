/**
 * The state a bucket dataset's writer keeps in the bucket (format parquet) as data: each state table
 * in a Parquet object, and a manifest naming them. Whoever can write the bucket can write these, so
 * what comes back is never opened as a DuckDB file (it can carry macros and views): each object is
 * checked against the table's columns and loaded into a DuckDB file made here, and values that reach
 * paths or keys are checked. docs/object-storage.md "The state in the bucket" and "Upgrading".
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import type { DuckDBConnection } from '@duckdb/node-api';
import { z } from 'zod';
import { unguessable } from '../../util/temp-file.js';
import { openDb, queryRows, sqlString } from '../duckdb.js';
import { DataDirError } from '../errors.js';
import { isPartition } from '../layout.js';
import { ensureSchema, SCHEMA_VERSION, type StoreAccounts } from '../schema.js';
import type { S3Location } from './location.js';
import { bucketError, conditionRefused, listObjects, noSuchKey } from './s3-client.js';
import { downloadTo } from './s3-dataset.js';

/** The folder the releases before this one kept the state in, under the dataset's prefix. */
const LEGACY_DIR = '_session_etl';
/** The DuckDB file those releases uploaded (never opened here). */
const LEGACY_STATE = 'state.duckdb';

/** The folder (ending in '/') where the state of `store` ('' or shards/I-of-N) is kept: beside the dataset's prefix. */
export function stateFolder(l: S3Location, store: string): string {
  const cut = l.prefix.lastIndexOf('/');
  const parent = cut < 0 ? '' : l.prefix.slice(0, cut + 1);
  const name = l.prefix.slice(cut + 1);
  return `${parent}${LEGACY_DIR}/${name ? `${name}/` : ''}${store ? `${store}/` : ''}`;
}

export function legacyStateFolder(l: S3Location, store: string): string {
  return `${l.prefix ? `${l.prefix}/` : ''}${LEGACY_DIR}/${store ? `${store}/` : ''}`;
}

const MANIFEST = 'state/manifest.json';
const MANIFEST_FORMAT = 'session-etl state';

const ManifestSchema = z
  .object({
    format: z.literal(MANIFEST_FORMAT),
    version: z.literal(1),
    schemaVersion: z.number().int().positive(),
    generation: z.number().int().positive(),
    /** The uploading writer's random part of the generation's folder: two writers never write the same object. */
    id: z.string().regex(/^[0-9a-f]{16}$/),
    accounts: z.enum(['single', 'many']),
    writtenAt: z.string(),
    tables: z.array(z.object({ name: z.string(), rows: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) }).strict()),
  })
  .strict();
export type StateManifest = z.infer<typeof ManifestSchema>;

const generationDir = (folder: string, m: Pick<StateManifest, 'generation' | 'id'>) => `${folder}state/${m.generation}-${m.id}/`;
const tableKey = (folder: string, m: Pick<StateManifest, 'generation' | 'id'>, table: string) => `${generationDir(folder, m)}${table}.parquet`;

export type RemoteState =
  | { kind: 'manifest'; folder: string; manifest: StateManifest; etag: string }
  | { kind: 'legacy'; key: string; generation: number };

/** The bucket keeps an earlier release's state (a DuckDB file), which this release never opens. Exit 2. */
export class LegacyBucketStateError extends DataDirError {
  constructor(l: S3Location, key: string) {
    super(
      `${l.url} keeps the state of an earlier session-etl release (s3://${l.bucket}/${key}, a DuckDB file), which this release does ` +
        'not open: a DuckDB file can carry code (macros, views), and anyone who can write the bucket could have planted one. ' +
        "To continue: run once from the data directory that wrote it (its own copy is used, and the state is then kept as data, " +
        `beside the dataset), or remove that object (\`aws s3 rm s3://${l.bucket}/${key}\`) to start the state anew — the day files ` +
        'stay, and a backfill of the range fetches it again keeping one row per session (docs/object-storage.md "Upgrading")',
    );
  }
}

/** The state under `folder` is not one this session-etl wrote: nothing restored (exit 2). */
function badState(l: S3Location, folder: string, key: string, what: string): DataDirError {
  return new DataDirError(
    `the state kept for ${l.url} cannot be used: s3://${l.bucket}/${key} ${what}; nothing was restored. ` +
      'It was not written by this session-etl (or was changed since): put back a good copy, or remove it ' +
      `(\`aws s3 rm --recursive s3://${l.bucket}/${folder}state/\`) to start the state anew — ` +
      'the day files stay, and a backfill of the range fetches it again, keeping one row per session',
  );
}

async function readManifest(client: S3Client, l: S3Location, folder: string): Promise<{ manifest: StateManifest; etag: string } | null> {
  const { GetObjectCommand } = await import('@aws-sdk/client-s3');
  const Key = `${folder}${MANIFEST}`;
  let text: string;
  let etag: string;
  try {
    const r = await client.send(new GetObjectCommand({ Bucket: l.bucket, Key }));
    text = await r.Body!.transformToString();
    etag = String(r.ETag ?? '');
  } catch (err) {
    if (noSuchKey(err)) return null;
    throw bucketError(err, l, `reading ${Key}`, { atStart: true });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw badState(l, folder, Key, 'is not JSON');
  }
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw badState(l, folder, Key, `is not a state manifest (${issue ? `${issue.path.join('.') || 'top level'}: ${issue.message}` : 'invalid'})`);
  }
  if (parsed.data.schemaVersion > SCHEMA_VERSION) {
    throw new DataDirError(`the state kept for ${l.url} (s3://${l.bucket}/${Key}) was written by a newer session-etl (schema ${parsed.data.schemaVersion}): upgrade session-etl`);
  }
  return { manifest: parsed.data, etag };
}

/** The generation an earlier release recorded in `key`'s metadata; null when there is no such object. */
async function headLegacy(client: S3Client, l: S3Location, key: string): Promise<number | null> {
  const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
  try {
    const head = await client.send(new HeadObjectCommand({ Bucket: l.bucket, Key: key }));
    const g = Number(head.Metadata?.generation ?? 0);
    return Number.isFinite(g) ? g : 0;
  } catch (err) {
    if (noSuchKey(err)) return null;
    throw bucketError(err, l, `reading ${key}`, { atStart: true });
  }
}

/** What the bucket keeps for `store`: a manifest beside the prefix, else under it (earlier releases), else their DuckDB file. */
export async function findRemoteState(client: S3Client, l: S3Location, store: string): Promise<RemoteState | null> {
  for (const folder of [...new Set([stateFolder(l, store), legacyStateFolder(l, store)])]) {
    const m = await readManifest(client, l, folder);
    if (m) return { kind: 'manifest', folder, ...m };
  }
  const key = `${legacyStateFolder(l, store)}${LEGACY_STATE}`;
  const generation = await headLegacy(client, l, key);
  return generation === null ? null : { kind: 'legacy', key, generation };
}

interface TableShape {
  name: string;
  columns: Array<{ name: string; type: string }>;
}

const shapes = new Map<StoreAccounts, Promise<TableShape[]>>();

/** The state tables of a format-parquet store of one account or many, as this version creates them. */
function stateTables(accounts: StoreAccounts): Promise<TableShape[]> {
  let p = shapes.get(accounts);
  if (!p) {
    p = (async () => {
      const db = await openDb(':memory:', { allowedDirectories: [] });
      try {
        await ensureSchema(db.conn, { format: 'parquet', accounts, newFile: true });
        const rows = await queryRows<{ t: string; c: string; type: string }>(
          db.conn,
          `SELECT table_name AS t, column_name AS c, data_type AS type FROM duckdb_columns()
           WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal ORDER BY table_name, column_index`,
        );
        const out = new Map<string, TableShape>();
        for (const r of rows) (out.get(r.t) ?? out.set(r.t, { name: r.t, columns: [] }).get(r.t)!).columns.push({ name: r.c, type: r.type });
        return [...out.values()];
      } finally {
        await db.close();
      }
    })();
    shapes.set(accounts, p);
  }
  return p;
}

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
const describeColumns = (cols: Array<{ name: string; type: string }>) => cols.map((c) => `${c.name} ${c.type}`).join(', ');

/** Loads the state the manifest names into a new DuckDB file at `target`, each object checked first. */
export async function loadRemoteState(
  client: S3Client,
  l: S3Location,
  remote: Extract<RemoteState, { kind: 'manifest' }>,
  target: string,
  workDir: string,
): Promise<void> {
  const { manifest, folder } = remote;
  const manifestKey = `${folder}${MANIFEST}`;
  // A state written before _session_days was kept: the table starts empty (built from the day files at the next flush).
  const older = !manifest.tables.some((t) => t.name === '_session_days');
  const expected = (await stateTables(manifest.accounts)).filter((t) => !(older && t.name === '_session_days'));
  const names = manifest.tables.map((t) => t.name).sort();
  const want = expected.map((t) => t.name).sort();
  if (names.join(',') !== want.join(',')) {
    throw badState(l, folder, manifestKey, `names the tables ${names.join(', ') || 'none'}, where a state has ${want.join(', ')}`);
  }
  const dir = join(workDir, `state-from-bucket-${unguessable()}`);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  // Made under a name no one can have planted a file at, then renamed over `target`.
  const made = `${target}.${unguessable()}.new`;
  try {
    const files = new Map<string, string>();
    for (const t of manifest.tables) {
      const key = tableKey(folder, manifest, t.name);
      const path = join(dir, `${files.size}.parquet`);
      if (!(await downloadTo(client, l, key, path))) throw badState(l, folder, manifestKey, `names ${key}, which is not there`);
      const sha = createHash('sha256').update(await readFile(path)).digest('hex');
      if (sha !== t.sha256) throw badState(l, folder, key, 'is not the object its manifest names (its SHA-256 differs: changed, or written by another run since)');
      files.set(t.name, path);
    }
    // It can read only the downloaded objects.
    const db = await openDb(made, { allowedDirectories: [dir] });
    try {
      const c = db.conn;
      await ensureSchema(c, { format: 'parquet', accounts: manifest.accounts, newFile: true });
      await c.run('BEGIN TRANSACTION');
      await c.run('DELETE FROM _session_etl_meta');
      for (const shape of expected) {
        const t = manifest.tables.find((x) => x.name === shape.name)!;
        const key = tableKey(folder, manifest, t.name);
        const file = sqlString(files.get(t.name)!);
        let got: Array<{ name: string; type: string }>;
        try {
          got = await queryRows<{ name: string; type: string }>(c, `SELECT column_name AS name, column_type AS type FROM (DESCRIBE SELECT * FROM read_parquet(${file}))`);
        } catch {
          throw badState(l, folder, key, 'is not a Parquet file');
        }
        if (describeColumns(got) !== describeColumns(shape.columns)) {
          throw badState(l, folder, key, `has the columns (${describeColumns(got).slice(0, 400)}), where table ${t.name} has (${describeColumns(shape.columns)})`);
        }
        const cols = shape.columns.map((x) => ident(x.name)).join(', ');
        const r = await c.run(`INSERT INTO ${ident(t.name)} (${cols}) SELECT ${cols} FROM read_parquet(${file})`);
        if (Number(r.rowsChanged) !== t.rows) throw badState(l, folder, key, `holds ${Number(r.rowsChanged)} rows, where its manifest says ${t.rows}`);
      }
      await checkLoaded(c, l, folder, manifest);
      await c.run('COMMIT');
      await c.run('CHECKPOINT');
    } catch (err) {
      await db.conn.run('ROLLBACK').catch(() => {});
      await db.close();
      if (err instanceof DataDirError) throw err;
      throw badState(l, folder, manifestKey, `could not be loaded (${String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 200)})`);
    }
    await db.close();
    await rm(`${target}.wal`, { force: true });
    await rename(made, target);
  } finally {
    await rm(made, { force: true }).catch(() => {});
    await rm(`${made}.wal`, { force: true }).catch(() => {});
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

/** The values that must hold in a loaded state: its record of itself, its partitions, no local file. */
async function checkLoaded(c: DuckDBConnection, l: S3Location, folder: string, m: StateManifest): Promise<void> {
  const key = (t: string) => tableKey(folder, m, t);
  const meta = new Map((await queryRows<{ key: string; value: string }>(c, 'SELECT key, value FROM _session_etl_meta')).map((r) => [r.key, r.value]));
  if (meta.get('format') !== 'parquet' || meta.get('accounts') !== m.accounts || meta.get('schema_version') !== String(m.schemaVersion)) {
    throw badState(l, folder, key('_session_etl_meta'), `does not describe a format-parquet store of ${m.accounts === 'many' ? 'many accounts' : 'one account'} of schema ${m.schemaVersion}`);
  }
  // Partitions become local paths and object keys: a day or Hive's default partition, nothing else.
  for (const t of ['_parquet_pending', '_pending_rows', '_session_days']) {
    for (const r of await queryRows<{ p: string }>(c, `SELECT DISTINCT partition AS p FROM ${t}`)) {
      if (!isPartition(r.p)) throw badState(l, folder, key(t), `holds the partition ${JSON.stringify(r.p).slice(0, 80)}, which is not a day (YYYY-MM-DD) nor __HIVE_DEFAULT_PARTITION__`);
    }
  }
  // Files of a data directory: a state carried in a bucket names none.
  const files = await queryRows<{ n: bigint }>(c, 'SELECT count(*) AS n FROM _pending_files');
  if (Number(files[0]?.n ?? 0) > 0) throw badState(l, folder, key('_pending_files'), 'names local files, which a state kept in a bucket never does');
}

/**
 * Writes the store's state (one view on `conn`) as `generation`: the tables' objects, then the manifest,
 * conditional on `manifestEtag` so that a state another writer uploaded meanwhile is never overwritten
 * (StateConflictError). Returns the manifest's ETag; older generations' objects are removed after.
 */
export async function uploadState(
  client: S3Client,
  l: S3Location,
  store: string,
  conn: DuckDBConnection,
  o: { generation: number; tmpDir: string; manifestEtag: string | undefined; conditional: boolean },
): Promise<string> {
  const { DeleteObjectCommand, PutObjectCommand } = await import('@aws-sdk/client-s3');
  const folder = stateFolder(l, store);
  const meta = new Map((await queryRows<{ key: string; value: string }>(conn, 'SELECT key, value FROM _session_etl_meta')).map((r) => [r.key, r.value]));
  const accounts: StoreAccounts = meta.get('accounts') === 'many' ? 'many' : 'single';
  const tables = await stateTables(accounts);
  const dir = join(o.tmpDir, `state-to-bucket-${process.pid}-${unguessable()}`);
  const gen = { generation: o.generation, id: unguessable() };
  await mkdir(dir, { recursive: true, mode: 0o750 });
  try {
    const written: StateManifest['tables'] = [];
    await conn.run('BEGIN TRANSACTION');
    try {
      for (const [i, t] of tables.entries()) {
        const r = await conn.run(
          `COPY (SELECT ${t.columns.map((x) => ident(x.name)).join(', ')} FROM ${ident(t.name)}) TO ${sqlString(join(dir, `${i}.parquet`))} (FORMAT parquet, COMPRESSION zstd)`,
        );
        written.push({ name: t.name, rows: Number(r.rowsChanged), sha256: '' });
      }
    } finally {
      await conn.run('COMMIT').catch(() => {});
    }
    for (const [i, t] of written.entries()) {
      const bytes = await readFile(join(dir, `${i}.parquet`));
      t.sha256 = createHash('sha256').update(bytes).digest('hex');
      const Key = tableKey(folder, gen, t.name);
      try {
        await client.send(new PutObjectCommand({ Bucket: l.bucket, Key, Body: bytes, ContentLength: bytes.length, ContentType: 'application/vnd.apache.parquet' }));
      } catch (err) {
        throw bucketError(err, l, `writing the state ${Key}`);
      }
    }
    const manifest: StateManifest = {
      format: MANIFEST_FORMAT,
      version: 1,
      schemaVersion: Number(meta.get('schema_version') ?? SCHEMA_VERSION),
      generation: o.generation,
      id: gen.id,
      accounts,
      writtenAt: new Date().toISOString(),
      tables: written,
    };
    const Key = `${folder}${MANIFEST}`;
    let etag: string;
    try {
      const put = await client.send(
        new PutObjectCommand({
          Bucket: l.bucket,
          Key,
          Body: JSON.stringify(manifest),
          ContentType: 'application/json',
          ...(o.conditional ? (o.manifestEtag ? { IfMatch: o.manifestEtag } : { IfNoneMatch: '*' }) : {}),
        }),
      );
      etag = String(put.ETag ?? '');
    } catch (err) {
      if (conditionRefused(err)) throw new StateConflictError(`s3://${l.bucket}/${Key}`, { cause: err });
      throw bucketError(err, l, `writing the state ${Key}`);
    }
    // The objects of other generations (this writer's older ones, or a run cut short) go.
    const keep = generationDir(folder, gen);
    try {
      for await (const obj of listObjects(client, l.bucket, `${folder}state/`)) {
        if (obj.Key && obj.Key !== Key && !obj.Key.startsWith(keep)) await client.send(new DeleteObjectCommand({ Bucket: l.bucket, Key: obj.Key })).catch(() => {});
      }
    } catch {
      // a listing that fails leaves them for the next upload
    }
    return etag;
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

/** The manifest changed since this run read it: another writer uploaded its state (see bucket-run.ts). */
export class StateConflictError extends Error {
  override readonly name = 'StateConflictError';
  constructor(
    readonly key: string,
    o?: { cause?: unknown },
  ) {
    super(`${key} changed since this run read it: another writer uploaded its state`, o);
  }
}

/** Removes the bucket's state of a store (not the lock); `legacy`: only what earlier releases kept under the prefix. */
export async function removeState(client: S3Client, l: S3Location, store: string, o: { legacy?: boolean } = {}): Promise<void> {
  const { DeleteObjectCommand, ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const folder = stateFolder(l, store);
  const legacy = legacyStateFolder(l, store);
  const keys = [`${legacy}${LEGACY_STATE}`];
  if (legacy !== folder || !o.legacy) keys.push(`${legacy}state.json`);
  if (!o.legacy) {
    keys.push(`${folder}state.json`);
    const page = await client.send(new ListObjectsV2Command({ Bucket: l.bucket, Prefix: `${folder}state/` })).catch(() => undefined);
    for (const obj of page?.Contents ?? []) if (obj.Key) keys.push(obj.Key);
  }
  for (const Key of new Set(keys)) await client.send(new DeleteObjectCommand({ Bucket: l.bucket, Key })).catch(() => {});
}
