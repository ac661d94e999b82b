#!/usr/bin/env node
// Entry point of the `session-etl` command. The TypeScript sources are compiled to dist/
// by `npm ci` (the `prepare` script) and by `npm test` / `npm start`.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// DuckDB statements (commits, merges, Parquet rewrites on their own connections) each hold one of
// libuv's worker threads while they run; with the default 4, file writes and fsyncs of the
// fetched windows would queue behind them. Set before anything uses the pool.
process.env.UV_THREADPOOL_SIZE ??= '16';

// Started by npm (`npx session-etl …`, `npm start`), this process runs under `sh -c`, and a
// SIGTERM sent to npm (a container's PID 1, `kill <npm's pid>`) reaches that shell, not this
// process: Debian's sh (dash) dies of it without passing it on, npm exits 143 at once, and this
// process would go on alone. So when the process that started it goes away, it stops as on
// SIGTERM (the command's own stop: windows in flight commit, a logged stop). Only under npm: a
// process started with `node bin/session-etl.js … &` from a script keeps running when the script
// ends. (A container should start node itself: docs/running.md, "In a container".)
if (process.env.npm_lifecycle_event === 'npx' || process.env.npm_lifecycle_event === 'start') {
  const launcher = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === launcher) return;
    clearInterval(watch);
    process.stderr.write(`session-etl: the process npm started it under (pid ${launcher}) has exited: stopping as on SIGTERM\n`);
    process.kill(process.pid, 'SIGTERM');
  }, 250);
  watch.unref();
}

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write('session-etl is not built yet: run `npm ci` (or `npm run build`) in the project directory first.\n');
  process.exit(2);
}
await import(main.href);
