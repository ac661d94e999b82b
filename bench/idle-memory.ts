/**
 * The scheduler's and the dashboard's idle memory (issues 31 and 39): what `session-etl schedule`
 * holds after start, at the peak of a run, and between runs after 1, 3 and 10 runs; what
 * `session-etl dashboard` holds idle and at its peak under load (pages of 1,000 sessions and CSV
 * downloads at once). RSS read from /proc/PID/status (VmRSS, VmHWM) of the real processes.
 *
 * Run alone: `npm run build && node dist/bench/idle-memory.js [sessionsPerDay] [runs]` (the scheduler)
 * or `node dist/bench/idle-memory.js dashboard DATA_DIR [memoryLimit]`; prints the figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmulator } from '../src/emulator/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'session-etl.js');
const D = 86_400;
const MiB = 2 ** 20;

/** VmRSS and VmHWM of a process, bytes. */
export function rssOf(pid: number): { rss: number; hwm: number; anon: number; file: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)\\s+kB`, 'm').exec(s)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
}

function start(args: string[], env: Record<string, string>): ChildProcess & { out(): string } {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return Object.assign(child, { out: () => out });
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Resident {
  rss: number;
  anon: number;
}

export interface SchedulerIdle {
  /** After start, before any run (DuckDB not loaded yet). */
  start: Resident;
  /** The least memory seen in each pause between two runs: after run 1, 2, …. */
  between: Resident[];
  /** VmHWM over all the runs. */
  peak: number;
}

/**
 * The scheduler on a cron of every 12 seconds, each run re-reading every day (a lookback over the
 * whole history: every run fetches and merges all of it), `runs` runs, with /metrics served as in
 * a deployment. Memory is read every 100 ms; each pause's figure is the least seen between the end
 * of a run and the end of the next.
 */
export async function measureScheduler(opts: { sessionsPerDay: number; days: number; runs: number; cron?: string }): Promise<SchedulerIdle> {
  const now = Math.floor(Date.now() / 1000);
  const from = Math.floor(now / D) * D - opts.days * D;
  const emu = await startEmulator({ seed: 7, from, to: now, now, sessionsPerDay: opts.sessionsPerDay });
  const dir = await mkdtemp(join(tmpdir(), 'session-etl-idle-'));
  const config = join(dir, 'config.json');
  await writeFile(config, JSON.stringify({ startDate: new Date(from * 1000).toISOString().slice(0, 10), lookback: `${opts.days + 1}d` }));
  const s = start(
    ['schedule', '--cron', opts.cron ?? '*/12 * * * * *', '--config', config, '--json', '--log-level', 'warn', '--no-progress', '--http-port', '0'],
    { REPORTING_URL: emu.url, REPORTING_API_KEY: emu.apiKey, SESSION_ETL_DATA_DIR: join(dir, 'data') },
  );
  try {
    await until(() => /scheduler running/.test(s.out()) || s.exitCode !== null, 30_000, 'the scheduler to start');
    if (s.exitCode !== null) throw new Error(`the scheduler exited ${s.exitCode}: ${s.out()}`);
    await new Promise((r) => setTimeout(r, 500));
    const m0 = rssOf(s.pid!);
    const ended = () => s.out().split('\n').filter((l) => l.startsWith('{') && l.includes('"outcome"')).length;
    await until(() => ended() > 0 || s.exitCode !== null, 300_000, 'the first run to end');
    const between: Resident[] = [];
    for (let k = 1; k <= opts.runs; k++) {
      const least = { rss: Infinity, anon: Infinity };
      await until(() => {
        if (s.exitCode !== null) return true;
        const m = rssOf(s.pid!);
        least.rss = Math.min(least.rss, m.rss);
        least.anon = Math.min(least.anon, m.anon);
        return ended() > k;
      }, 300_000, `run ${k + 1} to end`);
      if (s.exitCode !== null) throw new Error(`the scheduler exited ${s.exitCode} (${s.signalCode}): ${s.out().slice(-2000)}`);
      between.push(least);
    }
    return { start: { rss: m0.rss, anon: m0.anon }, between, peak: rssOf(s.pid!).hwm };
  } finally {
    s.kill('SIGTERM');
    await new Promise((r) => (s.exitCode !== null ? r(null) : s.once('close', r)));
    await emu.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export interface DashboardLoad {
  /** After start, the page not yet opened. */
  start: Resident;
  /** After the page's own requests (overview, coverage, runs, charts, a page of sessions). */
  afterPage: Resident;
  /** Peak (VmHWM) while 60 pages of 1,000 sessions and 8 CSV downloads are asked for at once. */
  peak: number;
  /** Once they have all been answered. */
  after: Resident;
  /** How the 68 requests were answered (status: count). */
  statuses: Record<string, number>;
}

/** `session-etl dashboard` on `dataDir` (a real process): idle, then under load (env: e.g. a memory setting). */
export async function measureDashboard(dataDir: string, env: Record<string, string> = {}): Promise<DashboardLoad> {
  const token = 'idle-memory-bench-token-0123456789';
  const d = start(['dashboard', '--port', '0', '--data-dir', dataDir], { SESSION_ETL_DASHBOARD_TOKEN: token, ...env });
  try {
    await until(() => /^Dashboard: \S+/m.test(d.out()) || d.exitCode !== null, 60_000, 'the dashboard to start');
    if (d.exitCode !== null) throw new Error(`the dashboard exited ${d.exitCode}: ${d.out()}`);
    const url = /^Dashboard: (\S+)/m.exec(d.out())![1]!;
    const get = async (path: string): Promise<string> => {
      try {
        const r = await fetch(new URL(path, url), { headers: { Authorization: `Bearer ${token}` } });
        await r.arrayBuffer();
        return String(r.status);
      } catch (err) {
        return `cut (${(err as Error).message})`;
      }
    };
    await new Promise((r) => setTimeout(r, 1000));
    const m0 = rssOf(d.pid!);
    for (const path of ['api/overview', 'api/coverage', 'api/runs', 'api/charts', 'api/sessions?pageSize=25']) await get(path);
    const m1 = rssOf(d.pid!);
    const statuses: Record<string, number> = {};
    const all = [
      ...Array.from({ length: 60 }, () => get('api/sessions?pageSize=1000')),
      ...Array.from({ length: 8 }, () => get('api/sessions.csv')),
    ];
    for (const st of await Promise.all(all)) statuses[st] = (statuses[st] ?? 0) + 1;
    // The heavy requests' memory is handed back half a second after the last (server.ts): read it after that.
    await new Promise((r) => setTimeout(r, 2000));
    const m2 = rssOf(d.pid!);
    if (process.env.BENCH_VERBOSE) process.stderr.write(d.out());
    return { start: { rss: m0.rss, anon: m0.anon }, afterPage: { rss: m1.rss, anon: m1.anon }, peak: m2.hwm, after: { rss: m2.rss, anon: m2.anon }, statuses };
  } finally {
    d.kill('SIGTERM');
    await new Promise((r) => (d.exitCode !== null ? r(null) : d.once('close', r)));
  }
}

/** The dashboard's figures in one line. */
export function describeDashboard(x: DashboardLoad): string {
  return (
    `idle at start ${res(x.start)}; after the page ${res(x.afterPage)}; ` +
    `peak under 60 pages of 1,000 + 8 CSV downloads at once ${mb(x.peak)} (answers ${Object.entries(x.statuses).map(([k, v]) => `${v}× ${k}`).join(', ')}); after them ${res(x.after)}`
  );
}

const mb = (b: number) => `${(b / MiB).toFixed(0)} MiB`;
const res = (r: Resident) => `${mb(r.rss)} (anon ${mb(r.anon)})`;

/** The figures in one line: RSS (RssAnon) at start, between runs 1, 3 and 10 (or the last), the peak. */
export function describeScheduler(sc: SchedulerIdle): string {
  const at = [1, 3, 10].filter((k) => k <= sc.between.length);
  if (!at.includes(sc.between.length)) at.push(sc.between.length);
  return `idle at start ${res(sc.start)}; between runs ${at.map((k) => `after ${k}: ${res(sc.between[k - 1]!)}`).join(', ')}; peak ${mb(sc.peak)}`;
}

async function main(): Promise<void> {
  if (process.argv[2] === 'dashboard') {
    const x = await measureDashboard(process.argv[3]!, process.argv[4] ? { SESSION_ETL_DUCKDB_MEMORY_LIMIT: process.argv[4] } : {});
    process.stdout.write(`dashboard: ${describeDashboard(x)}\n`);
    return;
  }
  const perDay = Number(process.argv[2] ?? 2000);
  const runs = Number(process.argv[3] ?? 10);
  const sc = await measureScheduler({ sessionsPerDay: perDay, days: 10, runs });
  process.stdout.write(`scheduler, ${perDay * 10} sessions re-read every run: ${describeScheduler(sc)}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
