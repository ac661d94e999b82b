/**
 * A data directory is never a way to destroy or lose data (issue 13): no link inside it is
 * followed, cleanup removes only files session-etl can prove are its own, the directory keeps its
 * format, a first run that commits nothing leaves nothing, and what is written is not world-readable.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { runBackfill, type PipelineOptions } from '../../src/pipeline/run.js';
import { DataDirError } from '../../src/store/errors.js';
import { readStatus } from '../../src/store/status.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { baseEnv, BIN, runCli } from '../helpers/cli.js';
import { readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const NOW = FROM + 4 * D;
const DAY1 = '2026-01-02';

const fx = useEmulator({ seed: 13, from: FROM, to: NOW, now: NOW, sessionsPerDay: 60 }, { prefix: 'session-etl-data-dir-safety-' });
const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-safety-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function opts(dataDir: string, extra: Partial<PipelineOptions> = {}): PipelineOptions {
  return { reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, now: () => NOW * 1000, sleep: async () => {}, parquetFlushSeconds: 0, ...extra };
}

/** Every path under `dir` (recursively, links not followed) with its contents or mode. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string, rel: string) => {
    for (const n of await readdir(d)) {
      const p = join(d, n);
      const st = await lstat(p);
      if (st.isDirectory()) {
        out[`${rel}${n}/`] = 'dir';
        await walk(p, `${rel}${n}/`);
      } else out[`${rel}${n}`] = st.isFile() ? await readFile(p, 'utf8') : 'link';
    }
  };
  await walk(dir, '');
  return out;
}

describe('links inside the data directory are never followed', () => {
  it.each([
    ['.tmp', 'dir'],
    ['pending', 'dir'],
    ['parquet', 'dir'],
    ['parquet/sessions', 'dir'],
    [`parquet/sessions/date=${DAY1}`, 'dir'],
    ['.session-etl.lock', 'dir'],
    ['sessions.duckdb', 'file'],
    ['state.duckdb', 'file'],
  ] as const)('%s as a link to elsewhere: refused (exit 2, naming it); what it points to is untouched', async (entry, kind) => {
    const root = await tempDir();
    const outside = join(root, 'outside');
    await mkdir(join(outside, 'keep'), { recursive: true });
    await writeFile(join(outside, 'victim.txt'), 'precious');
    await writeFile(join(outside, 'keep', 'victim.parquet'), 'precious too');
    const dataDir = join(root, 'data');
    const link = join(dataDir, entry);
    await mkdir(join(link, '..'), { recursive: true });
    await symlink(kind === 'dir' ? outside : join(outside, 'victim.txt'), link);
    const before = await tree(outside);

    const err = await runBackfill({ ...opts(dataDir), from: FROM, to: FROM + 2 * D }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataDirError);
    expect((err as DataDirError).exitCode).toBe(2);
    expect((err as Error).message).toContain(link);
    expect((err as Error).message).toMatch(/symbolic link/);
    expect(await tree(outside)).toEqual(before);
    // Nothing written beside the link either.
    expect(existsSync(join(dataDir, entry === 'state.duckdb' ? 'sessions.duckdb' : 'state.duckdb'))).toBe(false);
    if (entry !== 'sessions.duckdb') expect(existsSync(join(dataDir, 'sessions.duckdb'))).toBe(false);
  });

  it('the data directory itself may be a link (e.g. /srv/data -> /mnt/disk/data)', async () => {
    const root = await tempDir();
    await mkdir(join(root, 'disk'));
    await symlink(join(root, 'disk'), join(root, 'data'));
    const s = await runBackfill({ ...opts(join(root, 'data'), { format: 'both' }), from: FROM, to: FROM + 2 * D });
    expect(s.outcome).toBe('succeeded');
    expect(existsSync(join(root, 'disk', 'sessions.duckdb'))).toBe(true);
    expect((await readParquetDataset(join(root, 'disk'))).length).toBe(2);
  });
});

describe('cleanup removes only files session-etl can prove are its own', () => {
  it('files of others in .tmp/ and pending/ survive a run (and the run after it)', async () => {
    const dataDir = join(await tempDir(), 'data');
    await mkdir(join(dataDir, '.tmp', 'sub'), { recursive: true });
    await mkdir(join(dataDir, 'pending', 'sub'), { recursive: true });
    const theirs = { '.tmp/notes.txt': 'a', '.tmp/sub/x.parquet': 'b', 'pending/notes.txt': 'c', 'pending/sub/rows.ndjson': 'd' };
    for (const [p, v] of Object.entries(theirs)) await writeFile(join(dataDir, p), v);
    for (const range of [[FROM, FROM + D], [FROM + D, FROM + 2 * D]]) {
      const s = await runBackfill({ ...opts(dataDir, { format: 'both' }), from: range[0]!, to: range[1]! });
      expect(s.outcome).toBe('succeeded');
    }
    const after = await tree(dataDir);
    for (const [p, v] of Object.entries(theirs)) expect({ p, v: after[p] }).toEqual({ p, v });
    expect((await readDuckDbSessions(dataDir)).length).toBe(fx.emu.dataset.sessionsStartedIn(FROM, FROM + 2 * D).length);
  });

  it('our own leftovers in .tmp/ (a state snapshot or a Parquet file a kill -9 cut short) are removed by the next run', async () => {
    const dataDir = join(await tempDir(), 'data');
    expect((await runBackfill({ ...opts(dataDir, { format: 'both' }), from: FROM, to: FROM + D })).outcome).toBe('succeeded');
    const h = '0123456789abcdef'; // the unguessable end of today's names (util/temp-file.ts); earlier versions' names had none
    const ours = ['.tmp/state.json-4242', '.tmp/2026-01-01-4242-7.parquet', '.tmp/.probe-4242', `.tmp/.state.json.${h}.tmp`, `.tmp/2026-01-01-4242-7-${h}.parquet`, `.tmp/.probe-4242-${h}`, `.tmp/rows-000001767225600-4242-3-${h}.ndjson`];
    for (const p of ours) await writeFile(join(dataDir, p), 'left by a killed run');
    expect((await runBackfill({ ...opts(dataDir), from: FROM + D, to: FROM + 2 * D })).outcome).toBe('succeeded');
    const after = await tree(dataDir);
    for (const p of ours) expect(after[p], p).toBeUndefined();
  });
});

describe('a data directory keeps its format', () => {
  it('the library: without a format, the recorded one is used; a different one is refused, nothing written', async () => {
    const dataDir = join(await tempDir(), 'data');
    await runBackfill({ ...opts(dataDir, { format: 'duckdb' }), from: FROM, to: FROM + D });
    const s = await runBackfill({ ...opts(dataDir), from: FROM + D, to: FROM + 2 * D });
    expect(s.files.parquet).toBeNull();
    expect(existsSync(join(dataDir, 'parquet'))).toBe(false);
    for (const format of ['both', 'parquet'] as const) {
      const err = await runBackfill({ ...opts(dataDir, { format }), from: FROM, to: FROM + 3 * D }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DataDirError);
      expect((err as Error).message).toMatch(new RegExp(`format duckdb.*format ${format}`));
    }
    expect(existsSync(join(dataDir, 'parquet'))).toBe(false);
    expect(existsSync(join(dataDir, 'state.duckdb'))).toBe(false);
    expect((await readDuckDbSessions(dataDir)).length).toBe(fx.emu.dataset.sessionsStartedIn(FROM, FROM + 2 * D).length);
  });

  it('the CLI: a later backfill without --format keeps a parquet directory whole; an explicit other format is refused', async () => {
    const dataDir = join(await tempDir(), 'data');
    const env = { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dataDir };
    const at = (t: number) => new Date(t * 1000).toISOString();
    const first = await runCli(['backfill', '--from', at(FROM), '--to', at(FROM + 3 * D), '--format', 'parquet', '--no-progress'], env);
    expect(first.code).toBe(0);
    const perDay = async () => Object.fromEntries((await readParquetDataset(dataDir)).map((p) => [p.partition, p.rows.length]));
    const before = await perDay();
    expect(before[`date=${DAY1}`]).toBe(fx.emu.dataset.sessionsStartedIn(FROM + D, FROM + 2 * D).length);
    // Part of one day again, format not given: the directory's own (parquet) is used.
    const part = ['backfill', '--from', at(FROM + D + 6 * 3600), '--to', at(FROM + D + 9 * 3600), '--no-progress'];
    const again = await runCli(part, env);
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(await perDay()).toEqual(before);
    expect(existsSync(join(dataDir, 'sessions.duckdb'))).toBe(false);
    // Asked for explicitly, from the flag or the environment: refused, naming both formats, nothing written.
    for (const [args, extra] of [[['--format', 'both'], {}], [[], { SESSION_ETL_FORMAT: 'duckdb' }]] as const) {
      const r = await runCli([...part, ...args], { ...env, ...extra });
      expect({ code: r.code }).toEqual({ code: 2 });
      expect(r.stderr).toMatch(/format duckdb or both|format parquet/);
      expect(r.stderr).toMatch(/format (both|duckdb) was asked for/);
    }
    expect(existsSync(join(dataDir, 'sessions.duckdb'))).toBe(false);
    expect(await perDay()).toEqual(before);
  }, 60_000);

  it('a store whose first run was killed before its schema was written opens as a new one (both)', async () => {
    const dataDir = join(await tempDir(), 'data');
    await mkdir(dataDir);
    const inst = await DuckDBInstance.create(join(dataDir, 'sessions.duckdb'));
    inst.closeSync();
    const s = await runBackfill({ ...opts(dataDir), from: FROM, to: FROM + 2 * D });
    expect(s.files.parquet).not.toBeNull();
    expect((await readParquetDataset(dataDir)).length).toBe(2);
  });

  it('status reports the recorded format, also when no Parquet partition was written yet', async () => {
    const dataDir = join(await tempDir(), 'data');
    // Before the emulator's first session: windows succeed, nothing to write.
    const s = await runBackfill({ ...opts(dataDir, { format: 'both' }), from: FROM - 2 * D, to: FROM - D });
    expect(s.outcome).toBe('succeeded');
    expect(existsSync(join(dataDir, 'parquet'))).toBe(false);
    expect((await readStatus(dataDir, NOW * 1000)).format).toBe('both');
  });
});

describe('a first run that commits nothing leaves nothing', () => {
  it('a wrong API key: no data directory, no DuckDB file; an existing store is untouched', async () => {
    const root = await tempDir();
    const fresh = join(root, 'fresh');
    const err = await runBackfill({ ...opts(fresh, { apiKey: 'wrong-key', format: 'both' }), from: FROM, to: FROM + D }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(existsSync(fresh)).toBe(false);

    const empty = join(root, 'empty');
    await mkdir(empty);
    await runBackfill({ ...opts(empty, { apiKey: 'wrong-key' }), from: FROM, to: FROM + D }).catch(() => {});
    expect(await readdir(empty)).toEqual([]);

    const kept = join(root, 'kept');
    await runBackfill({ ...opts(kept, { format: 'both' }), from: FROM, to: FROM + D });
    const rows = (await readDuckDbSessions(kept)).length;
    await runBackfill({ ...opts(kept, { apiKey: 'wrong-key' }), from: FROM + D, to: FROM + 2 * D }).catch(() => {});
    expect((await readDuckDbSessions(kept)).length).toBe(rows);
    expect((await readStatus(kept, NOW * 1000)).lastRuns.map((r) => r.outcome).sort()).toEqual(['failed', 'succeeded']);
  });
});

describe('file modes: directories 0750 and files 0640 at most, whatever the umask', () => {
  it.each(['000', '022'])('umask %s: every file and directory the CLI writes (DuckDB WAL and pending files included)', async (umask) => {
    const dataDir = join(await tempDir(), 'data');
    const env = { ...baseEnv(), REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey };
    const sh = (args: string, extra: Record<string, string> = {}) =>
      new Promise<{ status: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
        const child = spawn('sh', ['-c', `umask ${umask}; exec "${process.execPath}" "${BIN}" ${args}`], { env: { ...env, ...extra } });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.stdout.resume();
        child.on('close', (status, signal) => resolve({ status, signal, stderr }));
      });
    const range = `--from ${new Date(FROM * 1000).toISOString()} --to ${new Date((FROM + 3 * D) * 1000).toISOString()}`;
    // Killed right after its first commit: the WAL and the pending files are still there.
    const crashed = await sh(`backfill ${range} --data-dir ${dataDir} --chunk 6h --concurrency 1 --no-progress`, { SESSION_ETL_CRASH_AT: 'after-commit:2' });
    expect(crashed.signal).toBe('SIGKILL');
    const seen = new Set<string>();
    const check = async (d: string) => {
      for (const n of await readdir(d)) {
        const p = join(d, n);
        const st = await stat(p);
        const mode = st.mode & 0o777;
        seen.add(n.replace(/\d+/g, 'N'));
        if (st.isDirectory()) {
          expect({ p, mode: mode.toString(8) }).toEqual({ p, mode: (mode & 0o750).toString(8) });
          await check(p);
        } else expect({ p, mode: mode.toString(8) }).toEqual({ p, mode: (mode & 0o640).toString(8) });
      }
    };
    await check(dataDir);
    expect(seen).toContain('sessions.duckdb.wal');
    expect(seen).toContain('pending');
    const done = await sh(`backfill ${range} --data-dir ${dataDir} --no-progress`);
    expect({ status: done.status, stderr: done.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
    seen.clear();
    await check(dataDir);
    expect(seen).toContain('part-N.parquet');
    expect((await stat(dataDir)).mode & 0o777).toBe(0o750);
  }, 60_000);
});
