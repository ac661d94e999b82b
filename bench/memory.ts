/**
 * Bench case "memory" (issues 31, 39; `npm run bench -- --only memory`): the run's memory budget.
 * (a) The long-text backfill inside memory cgroups of the smallest container the run accepts
 * (MIN_CONTAINER, 384 MiB; 5 runs), of 320 MiB (issue 39's other size) and of 16 MiB below the floor (one run each: below
 * the floor the run must refuse at start), with no memory setting:
 * completes (exact: the same rows as the run outside, no id twice, Parquet as many rows as the
 * table), refuses at start (exit 2), or is killed (SIGKILL: the kernel's OOM killer). (b) Peak RSS
 * with the default budget at 100 k and 1 M sessions, short and long text. (c) Throughput and the
 * DuckDB file's size against another build (BENCH_MEMORY_BASELINE) or the previous default (no
 * budget: SESSION_ETL_MEMORY_LIMIT=64GiB and DuckDB's 256MB), alternating. Needs root for the cgroups (skipped with the reason otherwise).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { MIN_CONTAINER } from '../src/config/memory-budget.js';
import type { Row } from './measured-process.js';

interface Emu {
  url: string;
  apiKey: string;
  close(): Promise<void>;
}

/** What bench/run.ts lends the case. */
export interface MemoryBench<E extends Emu> {
  work: string;
  dist: string;
  bin: string;
  big: number;
  small: number;
  emulatorOptions(sessions: number, extra?: Record<string, unknown>): Record<string, unknown>;
  startEmulatorProcess(options: Record<string, unknown>): Promise<E>;
  fetchAll(emu: E, concurrency: number): Promise<{ ms: number; bytes: number }>;
  backfillArgs(dataDir: string): string[];
  row(r: Row): void;
  log(s: string): void;
  fmt(n: number, digits?: number): string;
  secs(ms: number): string;
  mb(bytes: number): string;
}

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  wallMs: number;
  maxRssBytes: number | undefined;
  cpuMs: number | undefined;
  written: number | undefined;
}

const MiB = 2 ** 20;
/** The previous default: no budget to speak of, and DuckDB's 256MB. */
const PREVIOUS = { SESSION_ETL_MEMORY_LIMIT: '64GiB', SESSION_ETL_DUCKDB_MEMORY_LIMIT: '256MB' };

/**
 * Which parts run (BENCH_MEMORY_PARTS, a comma list; all by default): peak (b), throughput (c),
 * cgroup (a). BENCH_MEMORY_REPEAT: runs in each cgroup size (5). BENCH_MEMORY_BASELINE: the root of
 * another build (a checkout of main, built) that (c) alternates with instead of the previous default.
 */
const PARTS = new Set((process.env.BENCH_MEMORY_PARTS ?? 'peak,throughput,cgroup').split(',').map((p) => p.trim()));
const REPEAT = Number(process.env.BENCH_MEMORY_REPEAT ?? 5);
const BASELINE = process.env.BENCH_MEMORY_BASELINE;
/** BENCH_MEMORY_CGROUPS: the cgroup sizes, MiB (by default the floor (384), 320 and 16 below the floor). BENCH_MEMORY_ENV: a JSON object of settings every run gets (an experiment: {"SESSION_ETL_DUCKDB_MEMORY_LIMIT":"80MiB"}). */
const CGROUPS = process.env.BENCH_MEMORY_CGROUPS?.split(',').map(Number);
const EXTRA_ENV = JSON.parse(process.env.BENCH_MEMORY_ENV ?? '{}') as Record<string, string>;
/** BENCH_MEMORY_KINDS: short, long, or both (default). */
const KINDS = (process.env.BENCH_MEMORY_KINDS ?? 'short,long').split(',').map((k) => k.trim());
/** The smallest container the run accepts (src/config/memory-budget.ts), and a size just below it, where the run must refuse at start. */
const FLOOR_MIB = MIN_CONTAINER / MiB;
const BELOW_FLOOR_MIB = FLOOR_MIB - 16;
/** Issue 39's second size. */
const SMALL_MIB = 320;

export async function memoryCase<E extends Emu>(b: MemoryBench<E>): Promise<void> {
  const section = '11 memory';
  const cgroupParent = memoryCgroupParent();
  const baseline = BASELINE ? { bin: join(BASELINE, 'bin', 'session-etl.js'), dist: join(BASELINE, 'dist', 'bench') } : undefined;

  const run = async (emu: E, name: string, env: Record<string, string>, cgroupBytes?: number, build?: { bin: string; dist: string }): Promise<Outcome & { rows?: Counts; fileBytes?: number }> => {
    const dir = join(b.work, `mem-${name}`);
    const o = await runIn(build ? { ...b, ...build } : b, emu, dir, { ...EXTRA_ENV, ...env }, cgroupBytes === undefined ? undefined : { parent: cgroupParent as string, bytes: cgroupBytes });
    const rows = o.code === 0 ? await counts(dir) : undefined;
    const fileBytes = o.code === 0 ? statSync(join(dir, 'sessions.duckdb')).size : undefined;
    await rm(dir, { recursive: true, force: true });
    b.log(`  memory ${name}: exit ${o.code ?? o.signal}, ${b.secs(o.wallMs)}, peak RSS ${o.maxRssBytes ? b.mb(o.maxRssBytes) : '—'}${fileBytes ? `, file ${b.mb(fileBytes)}` : ''}`);
    return { ...o, ...(rows ? { rows } : {}), ...(fileBytes ? { fileBytes } : {}) };
  };
  const ok = (r: Outcome) => r.code === 0;
  const peaks = (rs: Outcome[]) => rs.map((r) => (ok(r) ? b.mb(r.maxRssBytes ?? 0) : `exit ${r.code ?? r.signal}`)).join(' / ');

  for (const long of [false, true]) {
    const kind = long ? 'long text' : 'short records';
    if (!long && !PARTS.has('peak') && !PARTS.has('throughput')) continue;
    if (!KINDS.includes(long ? 'long' : 'short')) continue;
    let s: Outcome | undefined;
    if (PARTS.has('peak')) {
      // (b) 100 k, then 1 M, default budget.
      const small = await b.startEmulatorProcess(b.emulatorOptions(b.small, long ? { longNotes: true } : {}));
      await b.fetchAll(small, 4);
      s = await run(small, `small-${long}`, {});
      await small.close();
    }
    const emu = await b.startEmulatorProcess(b.emulatorOptions(b.big, long ? { longNotes: true } : {}));
    await b.fetchAll(emu, 4);
    const dflt: Array<Outcome & { rows?: Counts; fileBytes?: number }> = [];
    const prev: Array<Outcome & { rows?: Counts; fileBytes?: number }> = [];
    const against = baseline ? `the build at ${BASELINE}` : `the previous default (${Object.entries(PREVIOUS).map(([k, v]) => `${k}=${v}`).join(' ')})`;
    if (PARTS.has('peak') || PARTS.has('throughput')) {
      // (c) default and the other, alternating: D P P D.
      for (const order of [['d', 'p'], ['p', 'd']]) {
        for (const w of order) {
          if (w === 'd') dflt.push(await run(emu, `big-${long}-default-${dflt.length}`, {}));
          else if (PARTS.has('throughput')) prev.push(await run(emu, `big-${long}-other-${prev.length}`, baseline ? {} : PREVIOUS, undefined, baseline));
        }
      }
    } else if (process.env.BENCH_MEMORY_REFERENCE !== 'skip') {
      // The cgroup runs' reference: one run outside (BENCH_MEMORY_REFERENCE=skip: none; the cgroup runs are then not checked exact).
      dflt.push(await run(emu, `big-${long}-default-0`, {}));
    }
    const peak = Math.max(...dflt.map((r) => r.maxRssBytes ?? 0));
    if (s) b.row({ section, measure: `peak RSS, default budget (no limit: 300 MB), ${b.fmt(b.small)} sessions, ${kind}`, value: s.maxRssBytes ? b.mb(s.maxRssBytes) : `exit ${s.code ?? s.signal}` });
    if (dflt.length) b.row({
      section,
      measure: `peak RSS, default budget, ${b.fmt(b.big)} sessions, ${kind} (${dflt.length} runs)`,
      value: peaks(dflt),
      goal: long ? '≤ 384 MiB' : '≤ 300 MB',
      met: dflt.every(ok) && peak <= (long ? 384 * MiB : 300e6),
    });
    if (s?.maxRssBytes) {
      const growth = peak / s.maxRssBytes;
      b.row({ section, measure: `peak RSS ${b.fmt(b.big)} / ${b.fmt(b.small)}, ${kind}`, value: b.fmt(growth, 2), goal: '≤ 1.2', met: growth <= 1.2 });
    }
    if (prev.length) {
      b.row({ section, measure: `peak RSS, ${against}, ${b.fmt(b.big)}, ${kind} (${prev.length} runs)`, value: peaks(prev) });
      const sum = (rs: Outcome[]) => rs.reduce((n, r) => n + r.wallMs, 0);
      const cpu = (rs: Outcome[]) => rs.reduce((n, r) => n + (r.cpuMs ?? 0), 0);
      const ratio = sum(prev) / sum(dflt);
      b.row({
        section,
        measure: `throughput, default budget vs ${against}, ${kind} (sums of 2 runs each, alternating; CPU core-seconds this / other)`,
        value: `${b.fmt(ratio, 2)} (${dflt.map((r) => b.secs(r.wallMs)).join(' / ')} against ${prev.map((r) => b.secs(r.wallMs)).join(' / ')}; CPU ${b.fmt(cpu(dflt) / 1000, 1)} / ${b.fmt(cpu(prev) / 1000, 1)})`,
        goal: baseline ? '≥ 0.95' : '≥ 0.90',
        met: ratio >= (baseline ? 0.95 : 0.9),
      });
      const file = (rs: Array<{ fileBytes?: number }>) => Math.max(...rs.map((r) => r.fileBytes ?? 0));
      const fileRatio = file(dflt) / file(prev);
      b.row({ section, measure: `DuckDB file, default budget vs ${against}, ${kind}`, value: `${b.fmt(fileRatio, 2)} (${b.mb(file(dflt))} against ${b.mb(file(prev))})`, goal: '≤ 1.15', met: fileRatio <= 1.15 });
    }

    // (a) Inside memory cgroups, long text only: REPEAT runs at the floor, one run in each size below it (refused at start).
    if (long && PARTS.has('cgroup')) {
      if (typeof cgroupParent === 'string') {
        b.row({ section, measure: 'backfills inside memory cgroups', value: `not run: ${cgroupParent}` });
      } else {
        const reference = dflt.find((r) => r.rows)?.rows;
        const sizes: Array<readonly [number, number]> = CGROUPS ? CGROUPS.map((m) => [m, m < FLOOR_MIB ? 1 : REPEAT] as const) : [[FLOOR_MIB, REPEAT], [SMALL_MIB, SMALL_MIB < FLOOR_MIB ? 1 : REPEAT], [BELOW_FLOOR_MIB, 1]];
        for (const [mib, times] of sizes) {
          const results: string[] = [];
          let met = 0;
          for (let i = 0; i < times; i++) {
            const r = await run(emu, `cgroup-${mib}-${i}`, {}, mib * MiB);
            const exact = r.rows !== undefined && reference !== undefined && r.rows.table === reference.table && r.rows.distinct === r.rows.table && r.rows.parquet === r.rows.table;
            results.push(
              r.code === 0
                ? `${exact ? 'exact' : `NOT exact (${JSON.stringify(r.rows)} against ${JSON.stringify(reference)})`} in ${b.secs(r.wallMs)}, peak RSS ${b.mb(r.maxRssBytes ?? 0)}`
                : r.code === 2
                  ? `refused at start (exit 2): ${lastLine(r.stderr)}`
                  : `${r.signal === 'SIGKILL' ? 'KILLED (SIGKILL: out of memory)' : `failed, exit ${r.code ?? r.signal}`} after ${b.secs(r.wallMs)}: ${lastLine(r.stderr)}`,
            );
            // At or above the floor the run completes, exact; below it, it refuses at start (never killed).
            if (mib >= FLOOR_MIB ? r.code === 0 && exact : r.code === 2) met++;
          }
          b.row({
            section,
            measure: `${b.fmt(b.big)} long-text backfill inside a ${mib} MiB memory cgroup, no memory setting (${times} runs)`,
            value: `${met} of ${times}: ${results.join('; ')}`,
            goal: mib < FLOOR_MIB ? 'refuses at start (exit 2), never killed' : `completes, exact, ${times} of ${times}`,
            met: met === times,
          });
        }
      }
    }
    await emu.close();
  }
}

interface Counts {
  table: number;
  distinct: number;
  parquet: number;
}

/** Rows of the table, distinct ids, and rows of the Parquet dataset. */
async function counts(dataDir: string): Promise<Counts> {
  const inst = await DuckDBInstance.create(':memory:');
  const c = await inst.connect();
  try {
    await c.run(`ATTACH '${join(dataDir, 'sessions.duckdb').replace(/'/g, "''")}' AS s (READ_ONLY)`);
    const t = (await c.runAndReadAll('SELECT count(*), count(DISTINCT session_id) FROM s.sessions')).getRows()[0]!;
    const p = (await c.runAndReadAll(`SELECT count(*) FROM read_parquet('${join(dataDir, 'parquet', 'sessions', '**', '*.parquet').replace(/'/g, "''")}')`)).getRows()[0]!;
    return { table: Number(t[0]), distinct: Number(t[1]), parquet: Number(p[0]) };
  } finally {
    c.closeSync();
    inst.closeSync();
  }
}

const lastLine = (s: string) => s.trim().split('\n').pop()?.slice(0, 300) ?? '';

/** The v1 memory controller's mount or a cgroup2 mount with memory enabled, or why there is none. */
export function memoryCgroupParent(): string | { dir: string; version: 1 | 2 } {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root';
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    const point = left?.split(' ')[4];
    const [fstype, , opts] = (right ?? '').split(' ');
    if (!point) continue;
    if (fstype === 'cgroup' && (opts ?? '').split(',').includes('memory')) return { dir: point, version: 1 };
    if (fstype === 'cgroup2' && readFileSync(join(point, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('memory')) return { dir: point, version: 2 };
  }
  return 'no memory cgroup mounted';
}

/** A backfill as a real process (peak RSS from rss-probe.js), optionally inside a new memory cgroup of `bytes`. */
/** A new memory cgroup of `bytes` (no swap) under `parent` (memoryCgroupParent); rmdir it when its tasks have exited. */
export function makeMemoryCgroup(parent: { dir: string; version: 1 | 2 }, bytes: number): string {
  const dir = join(parent.dir, `session-etl-bench-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir);
  const v1 = parent.version === 1;
  writeFileSync(join(dir, v1 ? 'memory.limit_in_bytes' : 'memory.max'), String(bytes));
  if (v1 && existsSync(join(dir, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(bytes));
  if (!v1 && existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
  return dir;
}

async function runIn<E extends Emu>(
  b: MemoryBench<E>,
  emu: E,
  dataDir: string,
  env: Record<string, string>,
  cgroup: { parent: string | { dir: string; version: 1 | 2 }; bytes: number } | undefined,
): Promise<Outcome> {
  const rssFile = join(tmpdir(), `bench-rss-${process.pid}-${randomBytes(6).toString('hex')}.json`);
  const node = [process.execPath, '--import', join(b.dist, 'rss-probe.js'), b.bin, ...b.backfillArgs(dataDir), '--json', '--log-level', 'warn'];
  let dir: string | undefined;
  let cmd = node;
  if (cgroup && typeof cgroup.parent !== 'string') {
    dir = makeMemoryCgroup(cgroup.parent, cgroup.bytes);
    cmd = ['sh', '-c', `echo $$ > '${join(dir, 'cgroup.procs')}' && exec "$0" "$@"`, ...node];
  }
  const t = performance.now();
  const child = spawn(cmd[0]!, cmd.slice(1), {
    // Only what a user's environment would hold: no memory setting unless the case gives one.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', REPORTING_URL: emu.url, REPORTING_API_KEY: emu.apiKey, BENCH_RSS_FILE: rssFile, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((res) => child.once('exit', (c, s) => res([c, s])));
  const wallMs = performance.now() - t;
  let probe: { maxRssKb: number; cpuMs: number } | undefined;
  try {
    probe = JSON.parse(await readFile(rssFile, 'utf8'));
  } catch {
    // killed: no exit handler ran
  }
  await rm(rssFile, { force: true });
  if (dir) {
    try {
      rmdirSync(dir);
    } catch {
      // a cgroup whose last task is still exiting: once more after a moment
      await new Promise((r) => setTimeout(r, 500));
      rmdirSync(dir);
    }
  }
  let written: number | undefined;
  try {
    written = (JSON.parse(stdout) as { sessions: { written: number } }).sessions.written;
  } catch {
    written = undefined;
  }
  return { code, signal, stderr, wallMs, maxRssBytes: probe ? probe.maxRssKb * 1024 : undefined, cpuMs: probe?.cpuMs, written };
}
