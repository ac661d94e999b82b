/**
 * A session read again with a start on another day (or a start that became null, the Hive default
 * partition) moves: the next export writes it into its new day's Parquet file and drops it from the
 * old day's file in the same flush, so the dataset holds every id exactly once.
 *
 * The emulator's sessions keep their start; the test puts a small rewriting proxy (real HTTP)
 * between the pipeline and the emulator, which changes one session's `started` in the answers of
 * the second export.
 */
import { createServer, request, type Server } from 'node:http';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/run.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';
import { readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { useS3 } from '../helpers/s3-server.js';
import { D, isoDay } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const TO = FROM + 3 * D;
const NOW = TO + 3 * 3600;

const fx = useEmulator({ seed: 31, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 60 }, { prefix: 'session-etl-moved-' });

/** What the proxy does to the session `id`: nothing, or give it this start (null: no start). */
let change: { id: string; started: number | null } | undefined;
let proxy: Server;
let proxyUrl = '';

function rewrite(v: unknown): void {
  if (Array.isArray(v)) for (const x of v) rewrite(x);
  else if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (change && o.id === change.id && 'started' in o) {
      o.started = change.started;
      if (typeof o.duration === 'number') o.duration = change.started === null || typeof o.ended !== 'number' ? null : o.ended - change.started;
    }
    for (const x of Object.values(o)) rewrite(x);
  }
}

beforeAll(async () => {
  const target = new URL(fx.emu.url);
  proxy = createServer((req, res) => {
    const headers = { ...req.headers, host: target.host };
    delete headers['accept-encoding'];
    const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => {
        let body = Buffer.concat(chunks);
        const h = { ...r.headers };
        if (change && String(h['content-type'] ?? '').includes('json')) {
          try {
            const doc = JSON.parse(body.toString('utf8')) as unknown;
            rewrite(doc);
            body = Buffer.from(JSON.stringify(doc), 'utf8');
          } catch {
            // not JSON: passed on as it is
          }
        }
        delete h['transfer-encoding'];
        h['content-length'] = String(body.length);
        res.writeHead(r.statusCode ?? 502, h);
        res.end(body);
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const u = new URL(fx.emu.url);
  u.host = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  proxyUrl = u.toString();
});

afterAll(async () => {
  await new Promise<void>((r) => proxy.close(() => r()));
});

type Format = 'both' | 'parquet' | 'duckdb';
let clock = 0;

async function exportAll(dataDir: string, format: Format) {
  const at = NOW + ++clock;
  const s = await runBackfill({
    reportingUrl: proxyUrl, apiKey: fx.emu.apiKey, dataDir, format, now: () => at * 1000, sleep: async () => {}, settleSeconds: 0, from: FROM, to: TO,
  });
  expect(s.outcome).toBe('succeeded');
  return s;
}

/** Each id's Parquet partitions (read with hyparquet, not DuckDB). */
async function partitionsById(dataDir: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const p of await readParquetDataset(dataDir)) {
    for (const r of p.rows) {
      const id = String(r.session_id);
      out.set(id, [...(out.get(id) ?? []), p.partition]);
    }
  }
  return out;
}

function dayOf(t: number | null): string {
  return t === null ? 'date=__HIVE_DEFAULT_PARTITION__' : `date=${isoDay(t)}`;
}

describe.each(['parquet', 'both', 'duckdb'] as const)('format %s', (format) => {
  const moves: Array<[string, (started: number) => number | null]> = [
    ['to the day before', (s) => s - D],
    ['to no start (the default partition)', () => null],
  ];
  it.each(moves)('a session whose start moves %s is in its new day only, once', async (_name, to) => {
    change = undefined;
    const dataDir = await fx.tempDir();
    await exportAll(dataDir, format);
    const before = format === 'duckdb' ? undefined : await partitionsById(dataDir);
    const stored = await readDuckDbSessions(dataDir).catch(() => []);
    // A session of the second day (2026-01-02).
    const day2 = fx.emu.dataset.sessionsStartedIn(FROM + D, FROM + 2 * D);
    const moved = day2[3]!;
    const started = to(moved.started as number);
    if (before) expect(before.get(moved.id)).toEqual([dayOf(moved.started as number)]);

    change = { id: moved.id, started };
    let second;
    try {
      second = await exportAll(dataDir, format);
    } finally {
      change = undefined;
    }
    // Counted as one session updated, not a new one.
    expect(second.sessions).toMatchObject({ new: 0, updated: 1 });

    if (format !== 'parquet') {
      const rows = await readDuckDbSessions(dataDir);
      expect(rows.filter((r) => r.session_id === moved.id).map((r) => r.started_at)).toEqual([started]);
      if (stored.length) expect(rows.length).toBe(stored.length);
    }
    if (format === 'duckdb') return;
    const after = await partitionsById(dataDir);
    expect(after.get(moved.id)).toEqual([dayOf(started)]);
    // Every id once, and the same ids as before.
    expect([...after.values()].filter((ps) => ps.length !== 1)).toEqual([]);
    expect([...after.keys()].sort()).toEqual([...before!.keys()].sort());
    // The old day's file no longer holds it.
    const old = (await readParquetDataset(dataDir)).find((p) => p.partition === dayOf(moved.started as number))!;
    expect(old.rows.map((r) => r.session_id)).not.toContain(moved.id);
  });
});

it('format parquet: a store whose day index is empty (made before it was kept) builds it from its files, and the moved session leaves its old day', async () => {
  change = undefined;
  const dataDir = await fx.tempDir();
  await exportAll(dataDir, 'parquet');
  const before = await partitionsById(dataDir);
  // As a store of the release before: the table is there (the schema made it), empty.
  const db = await DuckDBInstance.create(join(dataDir, 'state.duckdb'));
  const conn = await db.connect();
  await conn.run('DELETE FROM _session_days');
  conn.closeSync();
  db.closeSync();
  const moved = fx.emu.dataset.sessionsStartedIn(FROM + D, FROM + 2 * D)[5]!;
  change = { id: moved.id, started: (moved.started as number) - D };
  try {
    await exportAll(dataDir, 'parquet');
  } finally {
    change = undefined;
  }
  const after = await partitionsById(dataDir);
  expect(after.get(moved.id)).toEqual([dayOf((moved.started as number) - D)]);
  expect([...after.values()].filter((ps) => ps.length !== 1)).toEqual([]);
  expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
});

describe('a bucket dataset (format parquet), each run on a fresh machine', () => {
  const s3 = useS3({ buckets: ['lake'] });

  /** The bucket's day files, downloaded into `dir`/parquet/sessions/ (read then with hyparquet). */
  async function download(prefix: string, dir: string): Promise<void> {
    const c = s3.client();
    try {
      const list = await c.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: `${prefix}/` }));
      for (const o of list.Contents ?? []) {
        if (!/\/date=[^/]+\/part-[^/]+\.parquet$/.test(o.Key!)) continue;
        const got = await c.send(new GetObjectCommand({ Bucket: 'lake', Key: o.Key! }));
        const path = join(dir, 'parquet', 'sessions', o.Key!.slice(prefix.length + 1));
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, Buffer.from(await got.Body!.transformToByteArray()));
      }
    } finally {
      c.destroy();
    }
  }

  it('a session whose start moves to the day before leaves its old day in the bucket', async () => {
    change = undefined;
    const url = 's3://lake/sessions/moved';
    const run = async () => {
      const dir = await fx.tempDir();
      const r = await runCli(
        ['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--json', '--log-level', 'error'],
        { ...fx.env(dir), REPORTING_URL: proxyUrl, ...s3.env },
      );
      expect(r.code, r.stderr).toBe(0);
    };
    await run();
    const first = await fx.tempDir();
    await download('sessions/moved', first);
    const before = await partitionsById(first);
    const moved = fx.emu.dataset.sessionsStartedIn(FROM + D, FROM + 2 * D)[7]!;
    expect(before.get(moved.id)).toEqual([dayOf(moved.started as number)]);
    change = { id: moved.id, started: (moved.started as number) - D };
    try {
      await run();
    } finally {
      change = undefined;
    }
    const second = await fx.tempDir();
    await download('sessions/moved', second);
    const after = await partitionsById(second);
    expect(after.get(moved.id)).toEqual([dayOf((moved.started as number) - D)]);
    expect([...after.values()].filter((ps) => ps.length !== 1)).toEqual([]);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
  });
});
