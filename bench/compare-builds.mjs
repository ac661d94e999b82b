/**
 * Two builds of session-etl side by side (issue 40: "no slower, alternating against the main it
 * was filed on"): the bench's 1 M backfill (default format, glibc settings as the launchers set them),
 * run by each build in turn, alternating the order, against one emulator process of this checkout.
 *
 *   git worktree add --detach /tmp/old <commit> && (cd /tmp/old && npm ci)
 *   npm run build && node bench/compare-builds.mjs old=/tmp/old new=. --runs 3 [--long] [--sessions N]
 *
 * Prints each run (wall time, peak RSS from /usr/bin/time, CPU, sessions written, the data
 * directory's size, the load average) and the medians' ratio.
 */
import { mkdtempSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBenchEmulator, timedBackfill } from './timed-backfill.mjs';
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const builds = args.filter((a) => a.includes('=')).map((a) => { const [l, d] = a.split('='); return [l, resolve(d)]; });
const runs = Number(args[args.indexOf('--runs') + 1] ?? 3);
const long = args.includes('--long');
const sessions = args.includes('--sessions') ? Number(args[args.indexOf('--sessions') + 1]) : 1_000_000;
const emu = await startBenchEmulator(ROOT, sessions, long);
const glibc = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' };
async function one(dir) {
  const r = await timedBackfill({ dir, data: mkdtempSync('/tmp/ab-'), emu, env: { ...process.env, ...glibc } });
  if (r.code !== 0) throw new Error(`${dir} exit ${r.code}: ${r.err.slice(-1500)}`);
  return { ...r, written: JSON.parse(r.out).sessions.written };
}
const res = Object.fromEntries(builds.map(([l]) => [l, []]));
for (let i = 0; i < runs; i++) {
  const order = i % 2 ? [...builds].reverse() : builds;
  for (const [l, dir] of order) {
    const la = loadavg()[0].toFixed(2);
    const r = await one(dir);
    res[l].push(r);
    console.log(`${l} run ${i + 1}: ${r.wall.toFixed(2)} s, peak ${r.rssMiB.toFixed(1)} MiB, cpu ${r.cpu.toFixed(1)} s, written ${r.written}, dir ${(r.bytes / 2 ** 20).toFixed(1)} MiB, load ${la}`);
  }
}
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
for (const [l] of builds) console.log(`${l}: median wall ${med(res[l].map((r) => r.wall)).toFixed(2)} s, median peak ${med(res[l].map((r) => r.rssMiB)).toFixed(1)} MiB`);
const [a, b] = builds.map(([l]) => l);
if (b) console.log(`${b}/${a} wall ratio ${(med(res[b].map((r) => r.wall)) / med(res[a].map((r) => r.wall))).toFixed(3)} (time ${b} ÷ time ${a}; throughput ${b} = ${(med(res[a].map((r) => r.wall)) / med(res[b].map((r) => r.wall))).toFixed(3)}×)`);
emu.stop();
