/**
 * Preloaded into a child process (`node --import …/rss-probe.js …`): at exit, writes the process's
 * peak resident set size (getrusage maxrss, KiB) and CPU time (user + system, ms, all threads) to
 * the file named by BENCH_RSS_FILE.
 */
import { writeFileSync } from 'node:fs';

const out = process.env.BENCH_RSS_FILE;
if (out) {
  process.on('exit', () => {
    const u = process.resourceUsage();
    writeFileSync(out, JSON.stringify({ maxRssKb: u.maxRSS, cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000 }));
  });
}
