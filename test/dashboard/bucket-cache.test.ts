/**
 * The dashboard's local copy of a bucket (issue 38, MEDIUM 4): another local user who can write
 * into the data directory plants links at every name the copy writes — the manifest, the state's
 * temporary names, the final names — pointing at a file of ours; the real `session-etl dashboard`
 * process mirrors a real S3-compatible server (s3rver) and the file stays untouched. A copy
 * directory others can write is refused with exit 2, saying why and what to do.
 */
import { chmod, lstat, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stateFolder } from '../../src/store/dataset/bucket-state.js';
import { parseParquetUrl } from '../../src/store/dataset/location.js';
import { runCli } from '../helpers/cli.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3, type S3TestServer } from '../helpers/s3-server.js';
import { startDashboardCli } from './fixture.js';

const PRECIOUS = 'a file of the user that nobody may overwrite\n';
const URL_ = 's3://lake/sessions';

let s3: S3TestServer;
let root: string;
beforeAll(async () => {
  s3 = await startS3();
  root = await mkdtemp(join(tmpdir(), 'session-etl-bucket-cache-'));
  const l = parseParquetUrl(URL_, true);
  if (l.kind !== 's3') throw new Error('not an s3 location');
  const client = new S3Client({ endpoint: s3.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
  // A state.json for the copy to fetch (the page shows what it says); no day files are needed for the names to be written.
  await client.send(new PutObjectCommand({ Bucket: 'lake', Key: `${stateFolder(l, '')}state.json`, Body: JSON.stringify({ version: 1 }) }));
  client.destroy();
}, 60_000);
afterAll(async () => {
  await s3?.close();
  await rm(root, { recursive: true, force: true });
});

const env = () => ({ ...s3.env, AWS_S3_FORCE_PATH_STYLE: 'true', SESSION_ETL_S3_PATH_STYLE: 'true' });

describe("the dashboard's copy of a bucket", () => {
  it('links planted at every name it writes (.manifest.json, .state.json.part, .state.duckdb.part, state.json) leave their target untouched', async () => {
    const dataDir = join(root, 'planted');
    const cache = join(dataDir, '.cache', 'bucket');
    await mkdir(join(cache, 'dataset'), { recursive: true, mode: 0o750 });
    await mkdir(join(cache, 'state'), { recursive: true, mode: 0o750 });
    const target = join(root, 'precious.txt');
    await writeFile(target, PRECIOUS);
    const names = [join('dataset', '.manifest.json'), join('state', '.state.json.part'), join('state', '.state.duckdb.part'), join('state', 'state.json')];
    for (const n of names) await symlink(target, join(cache, n));
    const d = await startDashboardCli(['--data-dir', dataDir, '--parquet-url', URL_], env());
    try {
      // The copy is made before the address is printed: the server is up once it has been.
      expect((await fetch(d.url)).status).toBe(200);
    } finally {
      await d.stop();
    }
    expect(await readFile(target, 'utf8')).toBe(PRECIOUS);
    // The copy's own files replaced the links at the final names; the planted temporary names are left as they were.
    expect((await lstat(join(cache, 'dataset', '.manifest.json'))).isFile()).toBe(true);
    expect(JSON.parse(await readFile(join(cache, 'state', 'state.json'), 'utf8'))).toEqual({ version: 1 });
    expect((await lstat(join(cache, 'state', '.state.json.part'))).isSymbolicLink()).toBe(true);
  });

  it('a copy directory others can write is refused, exit 2, naming it and what to do', async () => {
    for (const [sub, mode] of [['.cache', 0o777], [join('.cache', 'bucket'), 0o757], [join('.cache', 'bucket', 'dataset'), 0o772]] as const) {
      const dataDir = join(root, `shared-${mode.toString(8)}`);
      await mkdir(join(dataDir, '.cache', 'bucket', 'dataset'), { recursive: true, mode: 0o750 });
      await chmod(join(dataDir, sub), mode);
      const r = await runCli(['dashboard', '--port', '0', '--data-dir', dataDir, '--parquet-url', URL_], env());
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`${join(dataDir, sub)} can be written by every user (mode ${mode.toString(8)})`);
      expect(r.stderr).toMatch(/chmod o-w,g-w/);
    }
  });
});
