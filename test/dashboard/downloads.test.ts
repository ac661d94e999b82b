/**
 * Large CSV downloads against the real `session-etl dashboard` process over a ~110 k-session store
 * the real CLI made (`session-etl demo`): several at once keep the process's memory bounded (its
 * peak resident set, read from /proc, a generous bound, not a timing), each one is whole or turned
 * away with Retry-After (never cut short in silence), and the page's overview answers meanwhile.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, waitFor } from '../helpers/cli.js';
import { startDashboardCli, type RunningDashboard } from './fixture.js';

const DOWNLOADS = 8;
const MAX_CSV_ROWS = 100_000;
/** Measured: the old dashboard peaked at 1.2-1.8 GiB with these downloads (more on a quieter machine, where fewer time out); streamed, ~0.4 GiB. */
const PEAK_RSS_BOUND_MIB = 768;

let root: string;
let dataDir: string;
let stored: number;
let dash: RunningDashboard;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'session-etl-dashboard-big-'));
  dataDir = join(root, 'demo');
  const made = await runCli(['demo', '--days', '40', '--sessions-per-day', '2800', '--data-dir', dataDir, '--no-progress', '--json']);
  if (made.code !== 0) throw new Error(`the demo exited ${made.code}: ${made.stderr}`);
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  const r = await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM read_parquet('${join(dataDir, 'parquet', 'sessions', '**', '*.parquet')}')`);
  stored = Number(r.getRowObjectsJS()[0]!.n);
  conn.closeSync();
  db.closeSync();
  dash = await startDashboardCli(['--data-dir', dataDir], {});
}, 240_000);
afterAll(async () => {
  await dash?.stop();
  await rm(root, { recursive: true, force: true });
});

/** Records of an RFC 4180 text (quoted fields may hold line breaks), the header included. */
function records(csv: string): number {
  let n = 0;
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    const c = csv[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && c === '\r' && csv[i + 1] === '\n') n++;
  }
  return n;
}

/** The dashboard process's own memory now (Linux RssAnon: heap, V8, DuckDB's buffers; not its code), MiB. */
function anonMib(pid: number): number {
  return Number(/^RssAnon:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/**
 * How far above its size before a burst the idle dashboard may stay once the burst is answered.
 * Measured on a loaded 2-core host (60 pages of 1,000 + 8 downloads): before the dashboard handed
 * memory back after heavy requests it stayed at +98 MiB here (+200 MiB in bench/idle-memory.ts),
 * freed but kept by the allocator; now +40 here (+3 in the bench).
 */
const IDLE_AFTER_LOAD_BOUND_MIB = 64;

/** The dashboard process's peak resident set so far (Linux VmHWM), MiB. */
function peakRssMib(pid: number): number {
  return Number(/^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

describe('large CSV downloads', () => {
  it(`${DOWNLOADS} at once: each whole or turned away with Retry-After, the overview answers meanwhile, the memory stays bounded`, async () => {
    expect(stored).toBeGreaterThan(MAX_CSV_ROWS);
    const before = peakRssMib(dash.pid);
    let answered = 0;
    let finished = 0;
    const downloads = Array.from({ length: DOWNLOADS }, async () => {
      const res = await dash.fetch('api/sessions.csv');
      answered++;
      const body = await res.text();
      finished++;
      return { status: res.status, headers: res.headers, body };
    });
    // While they run (each one answered: its headers sent, the whole ones still streaming), the page still gets its overview.
    await waitFor(() => answered === DOWNLOADS, 120_000, 'every download answered or turned away');
    const overview = await dash.fetch('api/overview');
    expect(overview.status).toBe(200);
    expect(((await overview.json()) as { totalSessions: number }).totalSessions).toBe(stored);
    expect(finished, 'the overview answered after every download had finished').toBeLessThan(DOWNLOADS);

    const answers = await Promise.all(downloads);
    const whole = answers.filter((a) => a.status === 200);
    expect(whole.length).toBeGreaterThanOrEqual(2);
    for (const a of whole) {
      expect(a.headers.get('x-total-count')).toBe(String(stored));
      expect(a.headers.get('x-truncated')).toBe(`first ${MAX_CSV_ROWS} of ${stored} rows`);
      expect(records(a.body)).toBe(MAX_CSV_ROWS + 1);
    }
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(503);
      expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(a.body).toMatch(/CSV downloads are running/);
    }
    const peak = peakRssMib(dash.pid);
    expect(peak, `peak RSS ${peak.toFixed(0)} MiB (${before.toFixed(0)} MiB before the downloads)`).toBeLessThan(PEAK_RSS_BOUND_MIB);
  }, 300_000);

  it('once a burst of heavy requests is answered, the idle dashboard hands its memory back (within a bound of its size before)', async () => {
    // The page's own requests first: what an idle dashboard with the page open holds.
    for (const path of ['api/overview', 'api/coverage', 'api/runs', 'api/charts', 'api/sessions?pageSize=25']) expect((await dash.fetch(path)).status).toBe(200);
    const before = anonMib(dash.pid);
    const answers = await Promise.all([
      ...Array.from({ length: 60 }, () => dash.fetch('api/sessions?pageSize=1000').then(async (r) => (await r.arrayBuffer(), r.status))),
      ...Array.from({ length: 8 }, () => dash.fetch('api/sessions.csv').then(async (r) => (await r.arrayBuffer(), r.status))),
    ]);
    expect(answers.filter((st) => st === 200).length).toBeGreaterThanOrEqual(20);
    expect(answers.every((st) => st === 200 || st === 503), `statuses ${answers.join(' ')}`).toBe(true);
    // Idle again: it hands back what the burst took (half a second after the last answer); waited for, up to 20 s.
    let now = anonMib(dash.pid);
    for (let i = 0; i < 200 && now - before > IDLE_AFTER_LOAD_BOUND_MIB; i++) {
      await new Promise((r) => setTimeout(r, 100));
      now = anonMib(dash.pid);
    }
    process.stderr.write(`dashboard RssAnon: ${before.toFixed(0)} MiB before the burst, ${now.toFixed(0)} MiB idle after it\n`);
    expect(now - before, `RssAnon ${now.toFixed(0)} MiB idle after the burst, ${before.toFixed(0)} MiB before it`).toBeLessThanOrEqual(IDLE_AFTER_LOAD_BOUND_MIB);
  }, 300_000);
});
