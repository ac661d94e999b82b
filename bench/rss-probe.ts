/**
 * Preloaded into a child process (`node --import …/rss-probe.js …`): at exit, writes the process's
 * peak resident set size (getrusage maxrss, KiB) to the file named by BENCH_RSS_FILE.
 */
import { writeFileSync } from 'node:fs';

const out = process.env.BENCH_RSS_FILE;
if (out) {
  process.on('exit', () => {
    writeFileSync(out, JSON.stringify({ maxRssKb: process.resourceUsage().maxRSS }));
  });
}
