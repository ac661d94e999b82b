/**
 * What a backfill's peak is made of, build against build or setting against setting (issue 39):
 * the bench's backfill (as bench/memory.ts runs its peak part: only PATH, HOME, TZ and the
 * emulator's URL and key in the environment, no glibc settings) under /usr/bin/time, each arm in
 * turn, alternating the order, against one emulator process of this checkout (warmed once), with
 * SESSION_ETL_MEMORY_TRACE on. Prints each run's wall time, peak (VmHWM), CPU, and the trace's
 * sample with the highest RSS split into mapped code (RssFile), V8's heap, ArrayBuffers, DuckDB's
 * pool by tag and the rest (RssAnon less those three: DuckDB outside its pool, its jemalloc's
 * retention, Node's native memory).
 *
 *   npm run build && node bench/peak-composition.mjs <sessions> <long: 0|1> <runs> \
 *     '[{"label":"main","dir":"/tmp/main"},{"label":"pool96","dir":".","env":{"SESSION_ETL_DUCKDB_MEMORY_LIMIT":"96MiB"},"node":["--max-semi-space-size=1"]}]'
 *
 * An arm's "args" are added to the backfill's command line (["--concurrency", "2"]); its "cgroupMiB"
 * runs it inside a new memory cgroup of that size (bench/memory.ts makeMemoryCgroup; root), and the line then
 * also gives the trace's highest RssAnon (what the cgroup charges beside the page cache).
 * The traces stay in $TMPDIR/peak-composition/ (trace-<label>-<sessions>-<S|L>-<run>.jsonl).
 */
import { mkdirSync, mkdtempSync, rmSync, rmdirSync, readFileSync, existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DAYS, startBenchEmulator, timedBackfill } from './timed-backfill.mjs';
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { sessionsQuery } = await import(join(ROOT, 'dist', 'src', 'reporting', 'query.js'));
const { makeMemoryCgroup, memoryCgroupParent } = await import(join(ROOT, 'dist', 'bench', 'memory.js'));
const OUT = join(tmpdir(), 'peak-composition');
mkdirSync(OUT, { recursive: true });
const [sessions, long, runs, armsJson] = [Number(process.argv[2]), process.argv[3] === '1', Number(process.argv[4]), process.argv[5]];
const arms = JSON.parse(armsJson).map((a) => ({ ...a, dir: resolve(a.dir) }));
const emu = await startBenchEmulator(ROOT, sessions, long);
const { url, apiKey, from: FROM, day: D } = emu;
// Every day fetched once, so that each run is served from the emulator's cache.
{ let next = 0; await Promise.all(Array.from({ length: 4 }, async () => { while (next < DAYS) { const d = next++; const r = await fetch(url, { method: 'POST', headers: { Authorization: apiKey, 'Content-Type': 'application/json' }, body: JSON.stringify({ query: sessionsQuery(FROM + d * D, FROM + (d + 1) * D) }) }); await r.arrayBuffer(); } })); }
async function one(arm, i) {
  const trace = join(OUT, `trace-${arm.label}-${sessions}-${long ? 'L' : 'S'}-${i}.jsonl`);
  rmSync(trace, { force: true });
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', ...(arm.trace === false ? {} : { SESSION_ETL_MEMORY_TRACE: trace }), ...(arm.env ?? {}) };
  let cgroup;
  if (arm.cgroupMiB) {
    const parent = memoryCgroupParent();
    if (typeof parent === 'string') return { fail: `no memory cgroup: ${parent}` };
    cgroup = makeMemoryCgroup(parent, arm.cgroupMiB * 2 ** 20);
  }
  const r = await timedBackfill({ dir: arm.dir, data: mkdtempSync(join(OUT, 'data-')), emu, env, node: arm.node ?? [], args: arm.args ?? [], cgroup });
  if (cgroup) { await new Promise((res) => setTimeout(res, 500)); rmdirSync(cgroup); }
  // The trace read once: its highest RssAnon, and its sample with the highest RSS.
  const samples = existsSync(trace) ? readFileSync(trace, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  const maxAnon = samples.reduce((m, x) => Math.max(m, x.RssAnon ?? 0), 0);
  if (r.code !== 0) return { fail: `${r.killed ? 'KILLED' : `exit ${r.code}`} after ${r.wall} s, highest RssAnon traced ${maxAnon} MiB: ${r.err.slice(-300)}` };
  const s = JSON.parse(r.out);
  const peakSample = samples.reduce((best, x) => (!best || x.VmRSS > best.VmRSS ? x : best), undefined);
  return { ...r, written: s.sessions.written, peakSample, maxAnon };
}
for (let i = 0; i < runs; i++) {
  const order = i % 2 ? [...arms].reverse() : arms;
  for (const arm of order) {
    const la = loadavg()[0].toFixed(2);
    const r = await one(arm, i);
    if (r.fail) { console.log(`${arm.label} run ${i + 1}: FAILED ${r.fail}`); continue; }
    const ps = r.peakSample;
    console.log(`${arm.label} ${sessions} ${long ? 'long' : 'short'} run ${i + 1}: ${r.wall.toFixed(2)} s, peak ${r.rssMiB.toFixed(1)} MiB, cpu ${r.cpu.toFixed(1)} s, written ${r.written}, dir ${(r.bytes / 2 ** 20).toFixed(1)} MiB, load ${la}->${loadavg()[0].toFixed(2)}` + (arm.cgroupMiB ? `, in ${arm.cgroupMiB} MiB: highest RssAnon ${r.maxAnon} MiB` : '') + (ps ? ` | peak sample: rss ${ps.VmRSS} file ${ps.RssFile} anon ${ps.RssAnon} heapTot ${ps.heapTotal} heapUsed ${ps.heapUsed} ab ${ps.arrayBuffers} pool ${ps.duckdbPool} tags ${JSON.stringify(ps.duckdbTags)} unmerged ${ps.unmergedRows} answers ${ps.answerBytes} rest ${ps.RssAnon - ps.heapTotal - ps.arrayBuffers - ps.duckdbPool}` : ''));
  }
}
emu.stop();
