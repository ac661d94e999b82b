#!/usr/bin/env node
// Entry point of the `session-etl` command. The TypeScript sources are compiled to dist/
// by `npm ci` (the `prepare` script) and by `npm test` / `npm start`.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// DuckDB statements (commits, merges, Parquet rewrites on their own connections) each hold one of
// libuv's worker threads while they run; with the default 4, file writes and fsyncs of the
// fetched windows would queue behind them. Set before anything uses the pool.
process.env.UV_THREADPOOL_SIZE ??= '16';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write('session-etl is not built yet: run `npm ci` (or `npm run build`) in the project directory first.\n');
  process.exit(2);
}
await import(main.href);
