import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Command } from 'commander';
import { ExitCode } from '../exit-codes.js';
import { executeRun } from '../execute-run.js';
import { UsageError } from '../usage-error.js';

interface DemoFlags {
  dataDir: string;
  days: string;
  sessionsPerDay: string;
  json?: boolean;
  progress?: boolean;
  keep?: boolean;
}

/** What a data directory of session-etl may hold: the demo clears only such a directory. */
const OWN_ENTRIES = new Set(['sessions.duckdb', 'sessions.duckdb.wal', 'state.duckdb', 'state.duckdb.wal', 'parquet', 'pending', '.tmp', '.session-etl.lock']);

/**
 * Starts the demo afresh without destroying what is not ours: a directory holding anything else
 * (or a DuckDB file of another program) is refused, and one a run is using is left alone (exit 3).
 */
async function clearDemoDir(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new UsageError(`--data-dir ${dir} cannot be used (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  const foreign = names.filter((n) => !OWN_ENTRIES.has(n));
  if (foreign.length) {
    throw new UsageError(
      `--data-dir ${dir} is not a session-etl data directory (it holds ${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ', …' : ''}): ` +
        'the demo clears its directory, so it refuses this one; choose another --data-dir',
    );
  }
  const { SessionStore } = await import('../../store/session-store.js');
  const { acquireLock } = await import('../../store/lock.js');
  for (const format of ['both', 'parquet'] as const) {
    if (names.includes(format === 'both' ? 'sessions.duckdb' : 'state.duckdb')) await (await SessionStore.open({ dataDir: dir, format, readOnly: true })).close();
  }
  const lock = await acquireLock(join(dir, '.session-etl.lock'), { command: 'demo (clearing its data directory)' });
  try {
    for (const n of names) if (n !== '.session-etl.lock') await rm(join(dir, n), { recursive: true, force: true });
  } finally {
    await lock.release();
  }
}

export function register(program: Command): void {
  program
    .command('demo')
    .description('Start the embedded emulator with ~90 days of seeded sessions and backfill them into data/demo/ (what `npm start` runs)')
    .option('--data-dir <dir>', 'where to write', join('data', 'demo'))
    .option('--days <n>', 'days of history', '90')
    .option('--sessions-per-day <n>', 'average sessions per day', '300')
    .option('--keep', 'keep what an earlier demo wrote (default: start afresh)')
    .option('--json', 'print the summary as JSON')
    .option('--no-progress', 'no progress bar')
    .action(async (flags: DemoFlags) => {
      const days = Number(flags.days);
      const perDay = Number(flags.sessionsPerDay);
      if (!Number.isInteger(days) || days < 1 || days > 3650) throw new UsageError('--days must be a whole number between 1 and 3650');
      if (!Number.isInteger(perDay) || perDay < 1) throw new UsageError('--sessions-per-day must be a positive whole number');
      const { startEmulator } = await import('../../emulator/index.js');
      const { runBackfill } = await import('../../pipeline/run.js');
      const nowS = Math.floor(Date.now() / 1000);
      const from = Math.floor(nowS / 86_400) * 86_400 - days * 86_400;
      const emulator = await startEmulator({ seed: 42, from, to: nowS, now: nowS, sessionsPerDay: perDay });
      try {
        if (!flags.keep) await clearDemoDir(flags.dataDir);
        process.stderr.write(`emulator: reporting endpoint ${emulator.url} (in-process, seed 42, ${days} days)\n`);
        const code = await executeRun(
          { reportingUrl: emulator.url, apiKey: emulator.apiKey, dataDir: flags.dataDir, format: 'both' },
          (o) => runBackfill({ ...o, from, to: nowS - 600 }),
          { json: Boolean(flags.json), progress: flags.progress !== false, logLevel: 'warn' },
        );
        if (code === ExitCode.ok && !flags.json) {
          const db = join(flags.dataDir, 'sessions.duckdb');
          const glob = join(flags.dataDir, 'parquet', 'sessions', '**', '*.parquet');
          process.stdout.write(
            [
              '',
              'Try it (with what npm ci installed):',
              `  npx session-etl status --data-dir ${flags.dataDir}`,
              `  npx session-etl sessions --data-dir ${flags.dataDir} --ascending duration=false --page-size 10 --attribute-names started,agent.name,duration,id`,
              `  npx session-etl sessions --data-dir ${flags.dataDir} --filter 'recording="true"' --output csv > recorded-sessions.csv`,
              'or with the DuckDB CLI (optional, not installed by npm ci; any DuckDB client will do):',
              `  duckdb -readonly ${db} "SELECT agent_name, count(*) AS sessions, round(avg(duration_seconds)) AS avg_s FROM sessions GROUP BY 1 ORDER BY 2 DESC LIMIT 10"`,
              `  duckdb -c "SELECT date, count(*) FROM read_parquet('${glob}', hive_partitioning = true) GROUP BY 1 ORDER BY 1 DESC LIMIT 7"`,
              '',
            ].join('\n'),
          );
        }
        process.exitCode = code;
      } finally {
        await emulator.close();
      }
    });
}
