/**
 * The dataset in an S3-compatible bucket (issue 30; docs/object-storage.md), through the real CLI
 * against a real S3 server on loopback (s3rver behind test/helpers/s3-server.ts), the dataset read
 * back with the AWS SDK (listing and reading objects) and DuckDB over the downloaded files.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { writeAccountsConfig, sameKey } from '../helpers/accounts-config.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { startS3, useS3 } from '../helpers/s3-server.js';
import { startDashboardCli } from '../dashboard/fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 8 * D;
const TO = FROM + 4 * D;
/** A session token no byte session-etl writes or prints may hold (the store ignores it). */
const SESSION_TOKEN = 'FwoGZXIvYXdzEXAMPLE-session-token-4711';

const fx = useEmulator({ seed: 31, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 60 }, { prefix: 'session-etl-s3-' });
const s3 = useS3({ buckets: ['lake', 'other'] });

const env = (dataDir: string, extra: Record<string, string> = {}) => ({ ...fx.env(dataDir), ...s3.env, AWS_SESSION_TOKEN: SESSION_TOKEN, ...extra });

/** Every object under a prefix: key → bytes. */
async function objects(bucket: string, prefix: string): Promise<Map<string, Buffer>> {
  const c = s3.client();
  try {
    const out = new Map<string, Buffer>();
    const list = await c.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
    for (const o of list.Contents ?? []) {
      const got = await c.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key! }));
      out.set(o.Key!, Buffer.from(await got.Body!.transformToByteArray()));
    }
    return out;
  } finally {
    c.destroy();
  }
}

/** The dataset's day files as DuckDB reads them (downloaded first): session ids of each day, and every id once? */
async function datasetRows(bucket: string, prefix: string, dir: string): Promise<Array<{ id: string; started: number }>> {
  const files = [...(await objects(bucket, prefix))].filter(([k]) => /\/date=[^/]+\/part-[^/]+\.parquet$/.test(k));
  expect(files.length).toBeGreaterThan(0);
  await rm(dir, { recursive: true, force: true });
  for (const [k, bytes] of files) {
    const rel = k.slice(prefix.length).replace(/^\//, '');
    await mkdir(join(dir, rel.split('/')[0]!), { recursive: true });
    await writeFile(join(dir, rel), bytes);
  }
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  try {
    const r = await conn.runAndReadAll(
      `SELECT session_id AS id, epoch(started_at)::BIGINT AS started FROM read_parquet('${join(dir, '*', '*.parquet')}', hive_partitioning = true) ORDER BY 1`,
    );
    return (r.getRowObjectsJS() as Array<{ id: string; started: bigint }>).map((x) => ({ id: x.id, started: Number(x.started) }));
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
}

const truth = (from = FROM, to = TO) => fx.emu.dataset.sessionsStartedIn(from, to).map((s) => s.id).sort();
const idsIn = (rows: Array<{ id: string; started: number }>, from = FROM, to = TO) => rows.filter((r) => r.started >= from && r.started < to).map((r) => r.id).sort();

/** Every byte the command printed and every file it left in the data directory. */
async function everything(r: { stdout: string; stderr: string }, dir: string): Promise<string> {
  let text = r.stdout + r.stderr;
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else text += (await readFile(p)).toString('latin1');
    }
  };
  await walk(dir);
  return text;
}

describe('the dataset in a bucket', () => {
  it('a backfill into the bucket; the data directory deleted; an export from an empty directory continues where it stopped', async () => {
    const root = await fx.tempDir();
    const first = join(root, 'first');
    const url = 's3://lake/sessions/continue';
    const b = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--json', '--log-level', 'error'], env(first));
    expect(b.stderr).toBe('');
    expect(b.code).toBe(0);
    const summary = JSON.parse(b.stdout) as { files: { parquet: string }; checkpoint: string };
    expect(summary.files.parquet).toBe(url);
    // The dataset is in the bucket, with the layout of parquet/sessions/, and nothing else under its prefix;
    // the state beside it (sessions/_session_etl/continue/) as data; no lock left.
    const keys = [...(await objects('lake', 'sessions/continue/')).keys()];
    // The four days, and the day of TO for the sessions that start exactly at its midnight (closed windows).
    expect(keys.filter((k) => k.includes('/date=')).length).toBeGreaterThanOrEqual(4);
    expect(keys.filter((k) => !/^sessions\/continue\/date=[^/]+\/part-0\.parquet$/.test(k))).toEqual([]);
    const state = [...(await objects('lake', 'sessions/_session_etl/continue/')).keys()];
    expect(state).toContain('sessions/_session_etl/continue/state/manifest.json');
    expect(state.some((k) => /^sessions\/_session_etl\/continue\/state\/\d+-[0-9a-f]{16}\/_coverage\.parquet$/.test(k))).toBe(true);
    expect(state.some((k) => k.endsWith('.duckdb') || k.endsWith('lock.json'))).toBe(false);
    expect(idsIn(await datasetRows('lake', 'sessions/continue', join(root, 'read')))).toEqual(truth());
    expect(existsSync(join(first, 'parquet'))).toBe(false);
    expect(await everything(b, first)).not.toContain(SESSION_TOKEN);

    // A fresh machine: an empty data directory, and a nightly export.
    await rm(first, { recursive: true, force: true });
    const fresh = join(root, 'fresh');
    fx.emu.resetStats();
    const e = await runCli(['export', '--parquet-url', url, '--json', '--log-level', 'error'], env(fresh));
    expect(e.stderr).toBe('');
    expect(e.code).toBe(0);
    const ex = JSON.parse(e.stdout) as { range: { from: string }; sessions: { new: number; updated: number } };
    // It continued from the checkpoint the backfill left (minus the lookback), fetching no window before it.
    expect(Date.parse(ex.range.from) / 1000).toBe(TO - D);
    // One window a day from there to now (a backfill again from FROM would be 9 or more).
    expect(fx.emu.stats().requests).toBeLessThanOrEqual(7);
    const rows = await datasetRows('lake', 'sessions/continue', join(root, 'read'));
    expect(idsIn(rows, FROM, NOW - 3600)).toEqual(truth(FROM, NOW - 3600));
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    // status and sessions read it from a machine that has never written it.
    const st = await runCli(['status', '--parquet-url', url, '--json'], env(join(root, 'reader')));
    expect(st.code, st.stderr).toBe(0);
    const status = JSON.parse(st.stdout) as { checkpoint: string; partitions: number; format: string };
    expect(status).toMatchObject({ format: 'parquet', partitions: (await objects('lake', 'sessions/continue/date=')).size });
    expect(Date.parse(status.checkpoint) / 1000).toBeGreaterThan(NOW - 3600);
    const list = await runCli(['sessions', '--parquet-url', url, '--source', 'parquet', '--output', 'ndjson', '--page-size', '10000', '--from', isoDay(FROM), '--to', isoDay(TO), '--attribute-names', 'id'], env(join(root, 'reader')));
    expect(list.code).toBe(0);
    expect(list.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id).sort()).toEqual(truth());
    // The dashboard of yet another machine: the figures of the run's state, the sessions of the dataset.
    const dash = await startDashboardCli(['--parquet-url', url], env(join(root, 'viewer')));
    try {
      const overview = (await (await dash.fetch('api/overview')).json()) as { checkpoint: string; totalSessions: number; format: string };
      expect(overview).toMatchObject({ checkpoint: status.checkpoint, format: 'parquet', totalSessions: rows.length });
    } finally {
      await dash.stop();
    }
  });

  it('a wrong access key, a missing bucket: refused before any fetch (exit 2), naming the bucket and the cause; the bucket unchanged', async () => {
    const root = await fx.tempDir();
    const url = 's3://lake/sessions/refused';
    expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--format', 'parquet', '--parquet-url', url, '--log-level', 'error'], env(join(root, 'a')))).code).toBe(0);
    const before = await objects('lake', 'sessions/refused/');
    fx.emu.resetStats();
    const secret = 'wJalrXUtnFEMI-wrong-secret-0000';
    const wrong = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url], env(join(root, 'b'), { AWS_ACCESS_KEY_ID: 'AKIAWRONGKEY', AWS_SECRET_ACCESS_KEY: secret }));
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/bucket lake \(prefix sessions\/refused\/\) refused the credentials \(InvalidAccessKeyId\)/);
    expect(await everything(wrong, join(root, 'b'))).not.toContain(secret);
    expect(fx.emu.stats().requests).toBe(0);
    const missing = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--parquet-url', 's3://no-such-bucket/x'], env(join(root, 'c')));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/bucket no-such-bucket \(prefix x\/\) does not exist/);
    const bad = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--parquet-url', 'https://lake.example.com/x'], env(join(root, 'd')));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/s3:\/\/BUCKET/);
    expect(fx.emu.stats().requests).toBe(0);
    const after = await objects('lake', 'sessions/refused/');
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [k, v] of before) expect(after.get(k)!.equals(v)).toBe(true);
  });

  it('throttling (503 SlowDown) is retried: the run completes, exact', async () => {
    const root = await fx.tempDir();
    const url = 's3://lake/sessions/slowdown';
    s3.slowDown(4);
    const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--json', '--log-level', 'error'], env(join(root, 'd')));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(s3.requests.filter((q) => q.status === 503).length).toBeGreaterThanOrEqual(4);
    const rows = await datasetRows('lake', 'sessions/slowdown', join(root, 'read'));
    expect(idsIn(rows)).toEqual(truth());
    expect(new Set(rows.map((x) => x.id)).size).toBe(rows.length);
  });

  it('the store going away mid-run: the run fails cleanly (exit 1, saying so); the next one completes, exact', async () => {
    const root = await fx.tempDir();
    const url = 's3://lake/sessions/gone';
    const dir = join(root, 'd');
    s3.stopAfterPuts(2);
    const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--log-level', 'error'], env(dir));
    expect(r.stderr, JSON.stringify(s3.requests.filter((q) => q.method === 'PUT').map((q) => [q.path, q.status]))).toMatch(/cannot be reached|failed/);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(/at .*\.js:\d+/);
    await s3.start();
    const again = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--json', '--log-level', 'error'], env(dir));
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    const rows = await datasetRows('lake', 'sessions/gone', join(root, 'read'));
    expect(idsIn(rows)).toEqual(truth());
    expect(new Set(rows.map((x) => x.id)).size).toBe(rows.length);
  });

  it('one writer per prefix: a second writer exits 3 naming the first; a store without conditional writes is said at start', async () => {
    const root = await fx.tempDir();
    const url = 's3://lake/sessions/locked';
    const slowEmu = env(join(root, 'a'), { REPORTING_URL: fx.emu.url });
    const first = startCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--concurrency', '1', '--max-requests-per-second', '0.5', '--log-level', 'info', '--no-progress'], slowEmu);
    await waitFor(() => /backfill started/.test(first.output()), 30_000, 'the first writer to start');
    const second = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url], env(join(root, 'b')));
    expect(second.code).toBe(3);
    expect(second.stderr).toMatch(new RegExp(`another session-etl run writes ${url.replace(/\//g, '\\/')}: pid ${first.pid}`));
    first.kill('SIGTERM');
    await first.result;

    const plain = await startS3({ conditionalWrites: false });
    try {
      const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--format', 'parquet', '--parquet-url', 's3://lake/x', '--log-level', 'warn'], { ...env(join(root, 'c')), ...plain.env });
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/does not honour conditional writes \(If-None-Match\): one writer per prefix is not enforced/);
    } finally {
      await plain.close();
    }
  });

  it('killed (SIGKILL) mid-upload on a fresh machine each time: the next run writes the day again from the state the bucket keeps; exact', async () => {
    const root = await fx.tempDir();
    const url = 's3://lake/sessions/killed';
    // The 3rd day file's upload never happens: the process is killed there.
    const killed = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--log-level', 'error'], env(join(root, 'a'), { SESSION_ETL_CRASH_AT: 'mid-parquet-rewrite:3' }));
    expect(killed.signal).toBe('SIGKILL');
    // A new machine (an empty data directory): the same backfill again completes it, exact.
    const again = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--json', '--log-level', 'error'], env(join(root, 'b')));
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    const rows = await datasetRows('lake', 'sessions/killed', join(root, 'read'));
    expect(idsIn(rows)).toEqual(truth());
    expect(new Set(rows.map((x) => x.id)).size).toBe(rows.length);
  });

  it('many accounts: one date-partitioned dataset in the bucket, its rows carrying the account', async () => {
    const root = await fx.tempDir();
    const config = join(root, 'config.json');
    await writeAccountsConfig(config, { dataDir: join(root, 'data'), format: 'parquet', parquetUrl: 's3://lake/accounts' }, { acme: 'K', globex: 'K' });
    const accountsEnv = { ...s3.env, REPORTING_URL: fx.emu.url, K: fx.emu.apiKey };
    const r = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'error'], accountsEnv);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const dir = join(root, 'read');
    await datasetRows('lake', 'accounts', dir);
    const inst = await DuckDBInstance.create(':memory:');
    const conn = await inst.connect();
    try {
      const per = (await conn.runAndReadAll(`SELECT account, count(DISTINCT session_id)::INT AS n, count(*)::INT AS rows FROM read_parquet('${join(dir, '*', '*.parquet')}', hive_partitioning = true) GROUP BY 1 ORDER BY 1`)).getRowObjectsJS();
      expect(per.map((x) => x.account)).toEqual(['acme', 'globex']);
      for (const x of per) expect(x.n).toBe(x.rows);
    } finally {
      conn.closeSync();
      inst.closeSync();
    }
    // Another machine reads each account's state from the bucket.
    await writeAccountsConfig(config, { dataDir: join(root, 'elsewhere'), format: 'parquet', parquetUrl: 's3://lake/accounts' }, { acme: 'K', globex: 'K' });
    const st = await runCli(['status', '--config', config, '--json'], accountsEnv);
    expect(st.stderr).toBe('');
    expect(st.code).toBe(0);
    const accounts = (JSON.parse(st.stdout) as { accounts: Array<{ account: string; status: { checkpoint: string } | null }> }).accounts;
    expect(accounts.map((a) => [a.account, a.status?.checkpoint])).toEqual([['acme', new Date(TO * 1000).toISOString().replace('.000Z', 'Z')], ['globex', new Date(TO * 1000).toISOString().replace('.000Z', 'Z')]]);
  });

  it('shards on fresh machines each night, then a change of their number: every account moved from the bucket\'s old stores, once', async () => {
    const root = await fx.tempDir();
    const names = ['acme', 'globex', 'initech', 'umbrella', 'hooli'];
    const config = join(root, 'config.json');
    const write = (dataDir: string) =>
      writeAccountsConfig(config, { dataDir, format: 'parquet', parquetUrl: 's3://lake/sharded' }, sameKey(names, 'K'));
    const e = { ...s3.env, REPORTING_URL: fx.emu.url, K: fx.emu.apiKey };
    const run = async (i: number, n: number, night: string) => {
      await write(join(root, `${night}-${i}-of-${n}`));
      const r = await runCli(['backfill', '--config', config, '--shard', `${i}/${n}`, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'error'], e);
      if (r.stderr && !/holds none of the/.test(r.stderr)) expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    };
    for (const i of [0, 1]) await run(i, 2, 'night1');
    // Three shards from now on, each pod on an empty disk: they move their accounts out of the two old stores.
    for (const i of [0, 1, 2]) await run(i, 3, 'night2');
    const keys = [...(await objects('lake', 'sharded/')).keys()];
    expect(keys.filter((k) => /-of-2/.test(k))).toEqual([]);
    // The state beside the prefix: only the three shards' (a shard that holds no account keeps none).
    const state = [...(await objects('lake', '_session_etl/sharded/')).keys()];
    expect(state.filter((k) => /-of-2/.test(k))).toEqual([]);
    const manifests = state.filter((k) => k.endsWith('manifest.json'));
    expect(manifests.length).toBeGreaterThan(0);
    expect(manifests.every((k) => /^_session_etl\/sharded\/shards\/\d-of-3\/state\/manifest\.json$/.test(k))).toBe(true);
    const dir = join(root, 'read');
    await datasetRows('lake', 'sharded', dir);
    const inst = await DuckDBInstance.create(':memory:');
    const conn = await inst.connect();
    try {
      const per = (await conn.runAndReadAll(`SELECT account, count(DISTINCT session_id)::INT AS n, count(*)::INT AS rows, list(DISTINCT filename) AS files FROM read_parquet('${join(dir, '*', '*.parquet')}', filename = true) GROUP BY 1 ORDER BY 1`)).getRowObjectsJS() as Array<{ account: string; n: number; rows: number }>;
      expect(per.map((x) => x.account)).toEqual([...names].sort());
      for (const x of per) expect([x.account, x.n]).toEqual([x.account, x.rows]);
    } finally {
      conn.closeSync();
      inst.closeSync();
    }
  });

  it('format both: the table stays in the data directory, the day files go to the bucket', async () => {
    const root = await fx.tempDir();
    const dir = join(root, 'd');
    const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--parquet-url', 's3://other/both', '--json', '--log-level', 'error'], env(dir));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readdirSync(dir)).toContain('sessions.duckdb');
    expect(existsSync(join(dir, 'parquet'))).toBe(false);
    expect(idsIn(await datasetRows('other', 'both', join(root, 'read')))).toEqual(truth());
  });
});
