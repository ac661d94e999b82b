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
import { spawn, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const builds = args.filter((a) => a.includes('=')).map((a) => { const [l, d] = a.split('='); return [l, resolve(d)]; });
const runs = Number(args[args.indexOf('--runs') + 1] ?? 3);
const long = args.includes('--long');
const sessions = args.includes('--sessions') ? Number(args[args.indexOf('--sessions') + 1]) : 1_000_000;
const D = 86400, DAYS = 365;
const TODAY = Math.floor(Date.now() / 1000 / D) * D, FROM = TODAY - (DAYS + 1) * D, TO = FROM + DAYS * D;
const opts = { seed: 1, from: FROM, to: TO + D, sessionsPerDay: sessions / DAYS, cacheBodies: { maxBytes: 3 * 2 ** 30 }, ...(long ? { longNotes: true } : {}) };
const child = spawn(process.execPath, [join(ROOT, 'dist', 'bench', 'emulator-process.js'), JSON.stringify(opts)], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: child.stdout });
const { url, apiKey } = JSON.parse(await new Promise((r) => lines.once('line', r)));
const iso = (t) => new Date(t * 1000).toISOString().slice(0, 10);
const glibc = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' };
function one(dir) {
  const data = mkdtempSync('/tmp/ab-');
  return new Promise((res, rej) => {
    const p = spawn('/usr/bin/time', ['-f', '%e %M %U %S', process.execPath, `${dir}/bin/session-etl.js`, 'backfill', '--from', iso(FROM), '--to', iso(TO), '--data-dir', data, '--json', '--log-level', 'warn'], { env: { ...process.env, ...glibc, REPORTING_URL: url, REPORTING_API_KEY: apiKey }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => (out += d)); p.stderr.on('data', (d) => (err += d));
    p.on('exit', (code) => {
      const last = err.trim().split('\n').pop().split(' ').map(Number);
      let size = 0; try { size = Number(execFileSync('du', ['-sb', data]).toString().split('\t')[0]); } catch {}
      rmSync(data, { recursive: true, force: true });
      if (code !== 0) return rej(new Error(`${dir} exit ${code}: ${err.slice(-1500)}`));
      const s = JSON.parse(out);
      res({ wall: last[0], rssMiB: last[1] / 1024, cpu: last[2] + last[3], written: s.sessions.written, bytes: size });
    });
  });
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
child.stdin.end();
