/**
 * Preloaded into a child process (`node --import …/rss-probe.js …`): at exit, writes the process's
 * peak resident set size (KiB) and CPU time (user + system, ms, all threads) to the file named by
 * BENCH_RSS_FILE.
 *
 * The peak is Linux's VmHWM, not getrusage's maxrss: maxrss survives execve, so a child forked
 * from a large parent (the benchmark holds a year of bodies at times) reported the parent's size
 * at the fork — a 100 k backfill "peaked" at 981 MB after the parent grew, 341 MB when it had not.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const out = process.env.BENCH_RSS_FILE;
if (out) {
  process.on('exit', () => {
    const u = process.resourceUsage();
    let peakKb = u.maxRSS;
    try {
      const hwm = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
      if (hwm) peakKb = Number(hwm[1]);
    } catch {
      // not Linux: maxrss it is
    }
    writeFileSync(out, JSON.stringify({ maxRssKb: peakKb, cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000 }));
  });
}
