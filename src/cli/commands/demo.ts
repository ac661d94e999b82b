import { readdir, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Command } from 'commander';
import { DIR_MODE, FILE_MODE, PARTITION_DIR_NAME, PARTITION_FILE, PENDING_FILE_NAME, TMP_FILE_NAME } from '../../store/layout.js';
import { makeDirs } from '../../store/make-dirs.js';
import { STATE_FILE } from '../../store/state-snapshot.js';
import { ExitCode } from '../exit-codes.js';
import { executeRun } from '../execute-run.js';
import { UsageError } from '../usage-error.js';
import { writeNewFileAt } from '../../util/temp-file.js';

interface DemoFlags {
  dataDir: string;
  days: string;
  sessionsPerDay: string;
  json?: boolean;
  progress?: boolean;
  keep?: boolean;
}

/** Written by `demo` into a directory it creates (or finds empty): only such a directory is ever cleared. */
export const DEMO_MARKER = '.session-etl-demo';

/** Whether `rel` (a '/'-separated path under the demo directory) is a file session-etl writes there. */
function isDemoFile(rel: string): boolean {
  const parts = rel.split('/');
  const [top, a, b, c] = parts;
  switch (parts.length) {
    case 1:
      return top === DEMO_MARKER || top === 'sessions.duckdb' || top === 'sessions.duckdb.wal' || top === STATE_FILE;
    case 2:
      if (top === '.tmp') return TMP_FILE_NAME.test(a!);
      if (top === 'pending') return PENDING_FILE_NAME.test(a!);
      // DuckDB's spill files, and the lock (or what a killed writer left beside it: see store/lock.ts).
      if (top === 'sessions.duckdb.tmp') return /^duckdb_temp/.test(a!);
      return /^\.session-etl\.lock(?:\.(?:new|stale)-\d+-\d+(?:-[0-9a-f]{16})?)?$/.test(top!) && a === 'holder.json';
    case 4:
      return top === 'parquet' && a === 'sessions' && PARTITION_DIR_NAME.test(b!) && c === PARTITION_FILE;
    default:
      return false;
  }
}

/** Whether `rel` is a directory session-etl makes in a data directory. */
function isDemoDir(rel: string): boolean {
  const parts = rel.split('/');
  if (parts.length === 1) return ['.tmp', 'pending', 'parquet', 'sessions.duckdb.tmp'].includes(rel) || /^\.session-etl\.lock(?:\.(?:new|stale)-\d+-\d+(?:-[0-9a-f]{16})?)?$/.test(rel);
  return rel === 'parquet/sessions' || (parts.length === 3 && rel.startsWith('parquet/sessions/') && PARTITION_DIR_NAME.test(parts[2]!));
}

/** Every file and directory under `dir` (links not followed), and those that are not the demo's own. */
async function walk(dir: string): Promise<{ files: string[]; dirs: string[]; foreign: string[] }> {
  const out = { files: [] as string[], dirs: [] as string[], foreign: [] as string[] };
  const visit = async (rel: string) => {
    for (const e of await readdir(join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory() && isDemoDir(r)) {
        out.dirs.push(r);
        await visit(r);
      } else if (e.isFile() && isDemoFile(r)) out.files.push(r);
      else out.foreign.push(r);
    }
  };
  await visit('');
  return out;
}

/**
 * Makes `dir` the demo's directory: a missing or empty one is created and marked; an unmarked one is
 * refused (it may be a real export); in a marked one only the demo's own files are deleted, after the
 * whole tree was checked (any other file refuses it). A directory a run is using is left alone (exit 3).
 */
async function prepareDemoDir(dir: string, keep: boolean): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw new UsageError(`--data-dir ${dir} cannot be used (${code ?? err})`);
    names = [];
  }
  if (names.length === 0) {
    try {
      await makeDirs(dir, DIR_MODE);
    } catch (err) {
      throw new UsageError(`--data-dir ${dir} cannot be created (${(err as NodeJS.ErrnoException).code ?? err}); choose another --data-dir`, { cause: err });
    }
    // Created exclusively, never through a link (the one writer): a link planted at the name since
    // the directory was found empty fails here, and what it points to is never written.
    await writeNewFileAt(join(dir, DEMO_MARKER), 'Created by `session-etl demo`: the demo deletes its own files here when it starts afresh.\n', { mode: FILE_MODE });
    return;
  }
  if (!names.includes(DEMO_MARKER)) {
    throw new UsageError(
      `--data-dir ${dir} is not empty and was not created by the demo (it has no ${DEMO_MARKER}): it may hold a real export, ` +
        'and the demo would delete or mix into it, so it refuses it; choose another --data-dir (a demo directory made ' +
        'before the demo marked its directories: delete it yourself, then run the demo again)',
    );
  }
  const foreignIn = (w: { foreign: string[] }) =>
    new UsageError(
      `--data-dir ${dir} is the demo's, but holds files the demo did not write (${w.foreign.slice(0, 3).map((f) => join(dir, f)).join(', ')}` +
        `${w.foreign.length > 3 ? `, and ${w.foreign.length - 3} more` : ''}): the demo deletes only its own files, so it refuses to start ` +
        'afresh here; move them away, or choose another --data-dir',
    );
  const first = await walk(dir);
  if (first.foreign.length) throw foreignIn(first);
  if (keep) return;
  const { SessionStore } = await import('../../store/session-store.js');
  const { acquireLock } = await import('../../store/lock.js');
  // A DuckDB file of another program, or one held for writing (exit 3), is refused before anything goes.
  if (first.files.includes('sessions.duckdb')) await (await SessionStore.open({ dataDir: dir, format: 'both', readOnly: true })).close();
  const lockPath = join(dir, '.session-etl.lock');
  const lock = await acquireLock(lockPath, { command: 'demo (clearing its data directory)' });
  try {
    // Checked again under the lock: what is deleted is exactly what was proven ours.
    const w = await walk(dir);
    if (w.foreign.length) throw foreignIn(w);
    for (const f of w.files) if (f !== DEMO_MARKER && !f.startsWith('.session-etl.lock/')) await unlink(join(dir, f));
    for (const d of w.dirs.reverse()) if (d !== '.session-etl.lock') await rmdir(join(dir, d));
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
    .option('--keep', 'keep what an earlier demo wrote (default: start afresh, deleting only the demo\'s own files)')
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
        await prepareDemoDir(flags.dataDir, Boolean(flags.keep));
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
              'Try it (with what npm ci installed; the dashboard prints the address to open, Ctrl-C stops it):',
              `  npx session-etl status --data-dir ${flags.dataDir}`,
              `  npx session-etl sessions --data-dir ${flags.dataDir} --ascending duration=false --page-size 10 --attribute-names started,agent.name,duration,id`,
              `  npx session-etl sessions --data-dir ${flags.dataDir} --filter 'recording="true"' --output csv > recorded-sessions.csv`,
              `  npx session-etl dashboard --data-dir ${flags.dataDir}`,
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
