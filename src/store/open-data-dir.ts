/**
 * Opening the data directory: the writer's settings, the checks that run before anything is
 * written (a file of another program where ours go, a DuckDB file that is not ours), creating the
 * directories, and opening the DuckDB file with the message a user can act on when that fails.
 */
import { mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { openDb, type Db } from './duckdb.js';
import { exists, fileHead } from './durable-fs.js';
import { DataDirError, firstLine, StoreBusyError, StoreSettingError } from './errors.js';
import type { OutputFormat, StoreLayout } from './layout.js';

/**
 * DuckDB's memory limit for a writer (SESSION_ETL_DUCKDB_MEMORY_LIMIT, default 256MB). Without one,
 * DuckDB keeps every block it reads or writes cached up to 80 % of the machine, so a run's memory
 * grew with the history. Measured (docs/benchmarks.md): 256MB costs a 1 M-session backfill no time;
 * 160MB made it ~40 % slower; 128MB ran out of memory in a merge. Readers keep DuckDB's default.
 */
const WRITER_MEMORY_LIMIT = process.env.SESSION_ETL_DUCKDB_MEMORY_LIMIT || '256MB';

/**
 * DuckDB worker threads of a writer while it runs. A run keeps several statements going at once (a
 * merge, two Parquet COPYs, commits, besides the fetching); with DuckDB's default (one per core)
 * they fought over the two cores: the 1 M backfill used 26-31 core-seconds, and 20-25 with one
 * thread, in less time (docs/benchmarks.md). The checkpoint when the store closes gets every core.
 */
const WRITER_THREADS = 1;

/** Refuses a writer setting from the environment that is not valid (before anything is created). */
export function checkWriterSettings(): void {
  if (!/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(WRITER_MEMORY_LIMIT.trim())) {
    throw new StoreSettingError(
      `SESSION_ETL_DUCKDB_MEMORY_LIMIT is ${JSON.stringify(WRITER_MEMORY_LIMIT)}: give an amount such as 256MB or 1GB, or unset it (default 256MB)`,
    );
  }
}

/**
 * Checks the directory and opens its DuckDB file. Nothing is written to a directory before it is
 * known to be ours: a file of another program where ours go, or a DuckDB file that is not ours, is
 * refused first. `existed` tells whether the DuckDB file was there before (its tables are checked next).
 */
export async function openDataDir(layout: StoreLayout, format: OutputFormat, readOnly: boolean): Promise<{ db: Db; existed: boolean }> {
  if (!readOnly) checkWriterSettings();
  let existed = await exists(layout.dbPath);
  if (readOnly && !existed) {
    throw new DataDirError(`no session-etl data in ${layout.dataDir} (expected ${layout.dbPath}); run a backfill or export first`);
  }
  if (!readOnly) await checkLayout(layout, format);
  if (existed) {
    const head = await fileHead(layout.dbPath);
    if (head.length === 0 && !readOnly && !(await exists(`${layout.dbPath}.wal`))) {
      // A run killed while DuckDB was creating the file leaves it empty: it holds nothing; start anew.
      await rm(layout.dbPath, { force: true });
      existed = false;
    } else if (head.length > 0 && head.subarray(8, 12).toString('latin1') !== 'DUCK') {
      // Refused before DuckDB sees it (DuckDB would try to load an extension to read, say, an SQLite file).
      throw new DataDirError(
        `${layout.dbPath} is not a session-etl DuckDB file (not a DuckDB database at all: it starts with ` +
          `${JSON.stringify(head.toString('latin1').replace(/[^\x20-\x7e]/g, '.'))}); choose another --data-dir or move it away`,
      );
    }
  }
  if (!readOnly && !existed) await prepareDirs(layout);
  try {
    const db = await openDb(layout.dbPath, { readOnly, ...(readOnly ? {} : { memoryLimit: WRITER_MEMORY_LIMIT, threads: WRITER_THREADS }) });
    return { db, existed };
  } catch (err) {
    throw translateOpenError(err, layout.dbPath);
  }
}

/** Refuses, writing nothing, a data directory where a file stands in the place of one of our directories. */
async function checkLayout(layout: StoreLayout, format: OutputFormat): Promise<void> {
  const dirs = [layout.dataDir, layout.tmpDir, layout.pendingDir];
  if (format !== 'duckdb') dirs.push(dirname(layout.parquetDir), layout.parquetDir);
  for (const d of dirs) {
    let st;
    try {
      st = await stat(d);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      throw new DataDirError(`data directory ${layout.dataDir} cannot be used (${code}): ${d} is not reachable; choose another --data-dir`, { cause: err });
    }
    if (!st.isDirectory()) {
      throw new DataDirError(
        `data directory ${layout.dataDir} cannot be used: ${d} is a file (of another program?) where session-etl keeps a directory; ` +
          'choose another --data-dir or move that file away',
      );
    }
  }
}

export async function prepareDirs(layout: StoreLayout): Promise<void> {
  try {
    await mkdir(layout.dataDir, { recursive: true });
    const st = await stat(layout.dataDir);
    if (!st.isDirectory()) throw new DataDirError(`data directory ${layout.dataDir} is not a directory`);
    await mkdir(layout.tmpDir, { recursive: true });
    // Leftovers of a crashed rewrite: never under parquet/sessions, so readers never saw them.
    for (const f of await readdir(layout.tmpDir)) await rm(join(layout.tmpDir, f), { force: true, recursive: true });
    const probe = join(layout.tmpDir, `.probe-${process.pid}`);
    const fh = await open(probe, 'w');
    await fh.close();
    await rm(probe, { force: true });
  } catch (err) {
    if (err instanceof DataDirError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new DataDirError(
      `data directory ${layout.dataDir} cannot be used (${code ?? (err as Error).message}): ` +
        (code === 'EACCES' || code === 'EROFS' || code === 'EPERM'
          ? 'it is not writable; choose another --data-dir or fix its permissions'
          : code === 'ENOTDIR' || code === 'EEXIST'
            ? 'a file stands where a directory is needed'
            : 'check the path'),
      { cause: err },
    );
  }
}

function translateOpenError(err: unknown, path: string): Error {
  const msg = err instanceof Error ? err.message : String(err);
  if (/lock/i.test(msg) && /conflict|Could not set lock/i.test(msg)) {
    return new StoreBusyError(
      `${path} is open in another process (another session-etl run, or a tool holding it for writing): ${firstLine(msg)}`,
      { cause: err },
    );
  }
  if (/not a valid DuckDB database file|Invalid Input|not a DuckDB|unable to open|Corrupt|IO Error/i.test(msg)) {
    return new DataDirError(`${path} is not a session-etl DuckDB file (${firstLine(msg)}); choose another --data-dir or move it away`, {
      cause: err,
    });
  }
  return err instanceof Error ? err : new Error(msg);
}
