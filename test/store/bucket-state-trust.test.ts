/**
 * The state a bucket keeps is data, never code (issue 38, HIGH): through the real CLI against a real
 * S3 server on loopback (s3rver), a state planted by anyone who can write the prefix — an earlier
 * release's DuckDB file carrying a macro that replaces strftime by a read of the API key file, a
 * pending partition that walks out of the data directory, a table object of another shape — is
 * refused, naming the object and what was wrong. Nothing is read or written outside the data
 * directory, and the key reaches no object of the bucket.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';
import { useS3 } from '../helpers/s3-server.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 6 * D;
const TO = FROM + 3 * D;

const fx = useEmulator({ seed: 38, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 30 }, { prefix: 'session-etl-trust-' });
const s3 = useS3();

/** Every object of the bucket: key → bytes. */
async function allObjects(): Promise<Map<string, Buffer>> {
  const c = s3.client();
  try {
    const out = new Map<string, Buffer>();
    let token: string | undefined;
    do {
      const page = await c.send(new ListObjectsV2Command({ Bucket: 'lake', ...(token ? { ContinuationToken: token } : {}) }));
      for (const o of page.Contents ?? []) {
        const got = await c.send(new GetObjectCommand({ Bucket: 'lake', Key: o.Key! }));
        out.set(o.Key!, Buffer.from(await got.Body!.transformToByteArray()));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  } finally {
    c.destroy();
  }
}

async function put(Key: string, Body: Buffer | string, Metadata?: Record<string, string>): Promise<void> {
  const c = s3.client();
  try {
    await c.send(new PutObjectCommand({ Bucket: 'lake', Key, Body, ...(Metadata ? { Metadata } : {}) }));
  } finally {
    c.destroy();
  }
}

async function sql(path: string, statements: string[]): Promise<void> {
  const inst = await DuckDBInstance.create(path);
  const conn = await inst.connect();
  try {
    for (const s of statements) await conn.run(s);
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
}

/** Every file under `dir` (relative paths). */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory()) await walk(join(d, e.name), `${rel}${e.name}/`);
      else out.push(`${rel}${e.name}`);
    }
  };
  await walk(dir, '');
  return out;
}

describe('the state a bucket keeps is data', () => {
  it('a planted state — an old DuckDB file with a strftime macro reading the key file, a traversing pending partition, a table of another shape — is refused; nothing leaves the data directory, no key reaches the bucket', async () => {
    const root = await fx.tempDir();
    // The API key is read from a file, as in the shipped CronJob: what a planted macro would read.
    const keyFile = join(root, 'secrets', 'api-key');
    await mkdir(join(root, 'secrets'), { recursive: true });
    await writeFile(keyFile, fx.emu.apiKey);
    await chmod(keyFile, 0o600);
    const outside = join(root, 'elsewhere');
    const env = (dataDir: string) => ({ REPORTING_URL: fx.emu.url, REPORTING_API_KEY_FILE: keyFile, SESSION_ETL_DATA_DIR: dataDir, ...s3.env });
    const backfill = (dataDir: string, url: string) =>
      runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--json', '--log-level', 'error'], env(dataDir));
    const exportFrom = (dataDir: string, url: string) => runCli(['export', '--parquet-url', url, '--json', '--log-level', 'error'], env(dataDir));

    // 1. An earlier release's state.duckdb, planted with a macro replacing strftime (which the
    //    partition of every stored row goes through) by a read of the key file, and a view doing the same.
    const local = join(root, 'local');
    expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--log-level', 'error'], env(local))).code).toBe(0);
    await sql(join(local, 'state.duckdb'), [
      `CREATE MACRO strftime(t, f) AS (SELECT 'LEAK-' || content FROM read_text('${keyFile}'))`,
      `CREATE VIEW leak AS SELECT content FROM read_text('${keyFile}')`,
      `INSERT INTO _parquet_pending VALUES ('x/../../../../elsewhere/evil', 99)`,
    ]);
    await put('trust/old/_session_etl/state.duckdb', await readFile(join(local, 'state.duckdb')), { generation: '7' });
    const old = await exportFrom(join(root, 'old'), 's3://lake/trust/old');
    expect(old.code, old.stderr).toBe(2);
    expect(old.stderr).toMatch(/keeps the state of an earlier session-etl release \(s3:\/\/lake\/trust\/old\/_session_etl\/state\.duckdb, a DuckDB file\), which this release does not open/);
    expect(old.stderr).toMatch(/aws s3 rm s3:\/\/lake\/trust\/old\/_session_etl\/state\.duckdb/);
    expect(fx.emu.stats().requests).toBeGreaterThan(0); // the local backfill's
    expect([...(await allObjects()).keys()].filter((k) => k.startsWith('trust/old/') || k.startsWith('trust/_session_etl/old/'))).toEqual([
      'trust/old/_session_etl/state.duckdb',
    ]);

    // 2. A state of this release whose _parquet_pending object holds a partition that walks out of
    //    the data directory (its manifest's SHA-256 and row count made to match, as a writer of the bucket can).
    expect((await backfill(join(root, 'a'), 's3://lake/trust/pending')).code).toBe(0);
    const folder = 'trust/_session_etl/pending/';
    const manifest = JSON.parse((await allObjects()).get(`${folder}state/manifest.json`)!.toString()) as {
      generation: number;
      id: string;
      tables: Array<{ name: string; rows: number; sha256: string }>;
    };
    const plant = async (table: string, select: string) => {
      const file = join(root, `${table}.parquet`);
      await sql(':memory:', [`COPY (${select}) TO '${file}' (FORMAT parquet)`]);
      const bytes = await readFile(file);
      const t = manifest.tables.find((x) => x.name === table)!;
      t.sha256 = createHash('sha256').update(bytes).digest('hex');
      t.rows = 1;
      await put(`${folder}state/${manifest.generation}-${manifest.id}/${table}.parquet`, bytes);
      await put(`${folder}state/manifest.json`, JSON.stringify(manifest));
    };
    await plant('_parquet_pending', `SELECT 'x/../../../../elsewhere/evil' AS partition, 1::BIGINT AS gen`);
    const before = await allObjects();
    const pending = await exportFrom(join(root, 'b'), 's3://lake/trust/pending');
    expect(pending.code, pending.stderr).toBe(2);
    expect(pending.stderr).toContain(
      `s3://lake/${folder}state/${manifest.generation}-${manifest.id}/_parquet_pending.parquet holds the partition "x/../../../../elsewhere/evil", which is not a day (YYYY-MM-DD)`,
    );
    expect(pending.stderr).toMatch(/nothing was restored/);
    // Nothing restored into the data directory, nothing uploaded.
    expect(existsSync(join(root, 'b', 'state.duckdb'))).toBe(false);
    expect([...(await allObjects()).keys()].sort()).toEqual([...before.keys()].sort());

    // 3. A table object of another shape: _coverage with its bounds as text.
    await plant('_parquet_pending', `SELECT '2026-01-05' AS partition, 1::BIGINT AS gen`);
    await plant('_coverage', `SELECT '0' AS start_s, '1' AS end_s, 'r' AS run_id, now() AS committed_at, '' AS account`);
    const shape = await exportFrom(join(root, 'c'), 's3://lake/trust/pending');
    expect(shape.code, shape.stderr).toBe(2);
    expect(shape.stderr).toMatch(
      /_coverage\.parquet has the columns \(start_s VARCHAR, end_s VARCHAR, run_id VARCHAR, committed_at TIMESTAMP WITH TIME ZONE, account VARCHAR\), where table _coverage has \(start_s BIGINT, end_s BIGINT/,
    );
    expect(existsSync(join(root, 'c', 'state.duckdb'))).toBe(false);

    // Nothing outside the data directories; the key in no object's key or body, nor in any output.
    expect(existsSync(outside)).toBe(false);
    expect(await filesUnder(root).then((f) => f.filter((p) => /evil|LEAK/.test(p)))).toEqual([]);
    for (const [k, body] of await allObjects()) {
      expect(k).not.toContain(fx.emu.apiKey);
      expect(body.includes(Buffer.from(fx.emu.apiKey)), k).toBe(false);
    }
    for (const r of [old, pending, shape]) expect(r.stdout + r.stderr).not.toContain(fx.emu.apiKey);
  });

  it('a pending partition planted in a local store is refused before it reaches a path: nothing written outside the data directory', async () => {
    const root = await fx.tempDir();
    const dataDir = join(root, 'data');
    const env = { ...fx.env(dataDir) };
    expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--log-level', 'error'], env)).code).toBe(0);
    await sql(join(dataDir, 'state.duckdb'), [`INSERT INTO _parquet_pending VALUES ('x/../../../elsewhere/evil', 99)`]);
    const r = await runCli(['export', '--log-level', 'error'], env);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`holds the partition "x/../../../elsewhere/evil", which is not a day (YYYY-MM-DD)`);
    expect(existsSync(join(root, 'elsewhere'))).toBe(false);
    expect((await filesUnder(root)).filter((p) => p.includes('evil'))).toEqual([]);
  });

  it('a macro planted in a local store cannot read outside the data directory (external access off): the key reaches no file and no output', async () => {
    const root = await fx.tempDir();
    const dataDir = join(root, 'data');
    const keyFile = join(root, 'secrets', 'api-key');
    await mkdir(join(root, 'secrets'), { recursive: true });
    await writeFile(keyFile, fx.emu.apiKey);
    await chmod(keyFile, 0o600);
    const env = { REPORTING_URL: fx.emu.url, REPORTING_API_KEY_FILE: keyFile, SESSION_ETL_DATA_DIR: dataDir };
    expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--log-level', 'error'], env)).code).toBe(0);
    await sql(join(dataDir, 'state.duckdb'), [
      `CREATE MACRO strftime(t, f) AS (SELECT 'LEAK-' || content FROM read_text('${keyFile}'))`,
      `CREATE MACRO hash(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u) AS (SELECT length(content) FROM read_text('${keyFile}'))`,
    ]);
    const r = await runCli(['backfill', '--from', isoDay(FROM - D), '--to', isoDay(TO), '--log-level', 'error'], env);
    expect(r.stdout + r.stderr).not.toContain(fx.emu.apiKey);
    expect((await filesUnder(root)).filter((p) => p.includes('LEAK'))).toEqual([]);
    for (const f of await filesUnder(dataDir)) expect((await readFile(join(dataDir, f))).includes(Buffer.from(fx.emu.apiKey)), f).toBe(false);
  });

  it('upgrading: the machine that wrote an earlier release\'s state.duckdb continues from its own copy, and the state moves beside the prefix as data', async () => {
    const root = await fx.tempDir();
    const dataDir = join(root, 'data');
    const env = { ...fx.env(dataDir), ...s3.env };
    expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--log-level', 'error'], env)).code).toBe(0);
    // As an earlier release left it: its state in the bucket under the prefix, and the generation it uploaded here.
    await put('trust/upgrade/_session_etl/state.duckdb', await readFile(join(dataDir, 'state.duckdb')), { generation: '3' });
    await put('trust/upgrade/_session_etl/state.json', '{}');
    await writeFile(join(dataDir, '.bucket-generation'), '3\n');
    const r = await runCli(['export', '--parquet-url', 's3://lake/trust/upgrade', '--json', '--log-level', 'error'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const keys = [...(await allObjects()).keys()].filter((k) => k.includes('upgrade'));
    expect(keys.filter((k) => k.startsWith('trust/upgrade/') && !/\/date=[^/]+\/part-0\.parquet$/.test(k))).toEqual([]);
    expect(keys).toContain('trust/_session_etl/upgrade/state/manifest.json');
    // Another machine continues from it.
    const st = await runCli(['status', '--parquet-url', 's3://lake/trust/upgrade', '--json'], { ...fx.env(join(root, 'reader')), ...s3.env });
    expect(st.code, st.stderr).toBe(0);
    expect((JSON.parse(st.stdout) as { checkpoint: string | null }).checkpoint).not.toBeNull();
  });
});
