/** Opening the data directory: the checks before anything is written, its directories, and its DuckDB file. */
import { chmod, lstat, mkdir, readdir, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeNewFile } from '../util/temp-file.js';
import { DEFAULT_ROW_GROUP_BYTES } from '../config/memory-budget.js';
import { openDb, type Db } from './duckdb.js';
import { measureRowBytes, rowGroupRows } from './row-groups.js';
import { exists, fileHead } from './durable-fs.js';
import { DataDirError, firstLine, StoreBusyError, StoreSettingError } from './errors.js';
import { DIR_MODE, FILE_MODE, layoutOf, refuseLinks, TMP_FILE_NAME, type OutputFormat, type ShardId, type StoreLayout } from './layout.js';
import { makeDirs } from './make-dirs.js';
import { formatMismatch } from './schema.js';

/**
 * A writer's DuckDB memory limit when the run's budget gives none: without one, DuckDB caches every
 * block up to 80 % of the machine, so a run's memory grew with the history. Readers keep the default.
 */
const WRITER_MEMORY_LIMIT = process.env.SESSION_ETL_DUCKDB_MEMORY_LIMIT || '256MB';

/**
 * A writer's DuckDB threads: its concurrent statements (merge, COPYs, commits) fought over the cores
 * with one thread per core, costing more core-seconds and time (docs/benchmarks.md). Its closing checkpoint gets every core.
 */
const WRITER_THREADS = 1;

/** Refuses an invalid writer setting from the environment (before anything is created). */
export function checkWriterSettings(): void {
  if (!/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(WRITER_MEMORY_LIMIT.trim())) {
    throw new StoreSettingError(
      `SESSION_ETL_DUCKDB_MEMORY_LIMIT is ${JSON.stringify(WRITER_MEMORY_LIMIT)}: give an amount such as 256MB or 1GB, or unset it (default: DuckDB's share of the memory budget, session-etl config shows it)`,
    );
  }
}

interface OpenedDataDir {
  db: Db;
  layout: StoreLayout;
  /** The format the DuckDB file's name says (sessions.duckdb: duckdb or both; state.duckdb: parquet). */
  fileFormat: OutputFormat;
  /** Whether the DuckDB file was there before (its tables are checked next). */
  existed: boolean;
  /** Directories this call created, then the DuckDB file when it was new: what discardNew may remove. */
  created: string[];
}

/**
 * Checks the directory and opens its DuckDB file. Nothing is written before the directory is known
 * to be ours: a file of another program where ours go, a link out of it, or a foreign DuckDB file is refused first.
 */
export async function openDataDir(
  dataDir: string,
  asked: OutputFormat | undefined,
  readOnly: boolean,
  shard?: ShardId,
  /** A writer's DuckDB memory_limit and row group bytes: the run's budget's shares. */
  memoryLimit?: string,
  /** Directories besides the data directory DuckDB may read (a reader's dataset elsewhere: status's copy of a bucket's). */
  readDirs: readonly string[] = [],
  rowGroupBytes: number = DEFAULT_ROW_GROUP_BYTES,
): Promise<OpenedDataDir> {
  if (!readOnly) checkWriterSettings();
  const fileFormat = await formatOfFiles(dataDir, asked, readOnly, shard);
  const layout = layoutOf(dataDir, fileFormat, shard);
  let existed = await exists(layout.dbPath);
  if (readOnly && !existed) {
    throw new DataDirError(`no session-etl data in ${dataDir} (expected ${layout.dbPath}); run a backfill or export first`);
  }
  if (!readOnly) await checkLayout(layout, asked ?? fileFormat);
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
  const created = !readOnly && !existed ? await prepareDirs(layout) : [];
  let db: Db;
  try {
    db = await openDb(layout.dbPath, {
      readOnly,
      allowedDirectories: [dataDir, ...readDirs],
      // A writer spills to .tmp/duckdb/ when a merge needs more than its memory_limit; its row groups hold rowGroupBytes (row-groups.ts).
      ...(readOnly
        ? {}
        : {
            memoryLimit: memoryLimit ?? WRITER_MEMORY_LIMIT,
            threads: WRITER_THREADS,
            tempDirectory: join(layout.tmpDir, 'duckdb'),
            rowGroupRows: async (conn) => rowGroupRows(rowGroupBytes, await measureRowBytes(conn)),
          }),
    });
  } catch (err) {
    throw translateOpenError(err, layout.dbPath, readOnly);
  }
  const resize = db.resizeRowGroups;
  // A store that held no rows when opened sizes its row groups from the first rows committed (table-sink.ts).
  if (resize) db.fitRowGroups = (rowBytes) => resize(rowGroupRows(rowGroupBytes, rowBytes));
  if (!existed) {
    try {
      // DuckDB created the file with the umask's mode.
      const mode = (await stat(layout.dbPath)).mode & 0o777;
      if (mode & ~FILE_MODE) await chmod(layout.dbPath, mode & FILE_MODE);
    } catch (err) {
      await db.close().catch(() => {});
      throw err;
    }
    created.push(layout.dbPath);
  }
  return { db, layout, fileFormat, existed, created };
}

/** Which DuckDB file to open (state.duckdb: format parquet); without a format asked for, the one there (none: both). */
async function formatOfFiles(dataDir: string, asked: OutputFormat | undefined, readOnly: boolean, shard?: ShardId): Promise<OutputFormat> {
  const sessionsFile = await exists(layoutOf(dataDir, 'both', shard).dbPath);
  const stateFile = await exists(layoutOf(dataDir, 'parquet', shard).dbPath);
  if (asked === 'parquet' && sessionsFile && !stateFile) throw formatMismatch(dataDir, 'duckdb or both', asked);
  if (asked && asked !== 'parquet' && stateFile && !sessionsFile) throw formatMismatch(dataDir, 'parquet', asked);
  if (asked) return asked;
  if (sessionsFile && stateFile) {
    throw new DataDirError(
      `data directory ${dataDir} holds both sessions.duckdb (format duckdb or both) and state.duckdb (format parquet): ` +
        'pass --format to say which one to use',
    );
  }
  if (stateFile) return 'parquet';
  if (!sessionsFile && readOnly) throw new DataDirError(`no session-etl data in ${dataDir}: run a backfill or an export first`);
  return 'both';
}

/** Removes what a closed writer that committed nothing created: its new DuckDB file (and WAL), and its directories when empty. */
export async function discardNew(created: readonly string[]): Promise<void> {
  for (const p of created) {
    if (!p.endsWith('.duckdb')) continue;
    for (const f of [p, `${p}.wal`]) {
      const st = await lstat(f).catch(() => undefined);
      if (st?.isFile()) await unlink(f).catch(() => {});
    }
  }
  for (const p of [...created].reverse()) if (!p.endsWith('.duckdb')) await rmdir(p).catch(() => {});
}

/** Refuses, writing nothing, a data directory where a file stands in the place of one of our directories, or a link leads out of it. */
async function checkLayout(layout: StoreLayout, format: OutputFormat): Promise<void> {
  await refuseLinks(layout.dataDir, shardOfLayout(layout));
  const dirs = [layout.dataDir, ...(layout.storeDir !== layout.dataDir ? [dirname(layout.storeDir), layout.storeDir] : []), layout.tmpDir, layout.pendingDir];
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

/** Creates the data directory and .tmp/ when missing; returns the directories it created. */
export async function prepareDirs(layout: StoreLayout): Promise<string[]> {
  const created: string[] = [];
  try {
    if (await makeDirs(layout.dataDir, DIR_MODE)) created.push(layout.dataDir);
    const st = await stat(layout.dataDir);
    if (!st.isDirectory()) throw new DataDirError(`data directory ${layout.dataDir} is not a directory`);
    if (layout.storeDir !== layout.dataDir) {
      // A shard's own store (shards/I-of-N/): each level made and recorded, so that discardNew can remove it again.
      for (const d of [dirname(layout.storeDir), layout.storeDir]) if (await mkdir(d, { mode: DIR_MODE }).then(() => true, ignoreExists)) created.push(d);
    }
    if (await makeDirs(layout.tmpDir, DIR_MODE)) created.push(layout.tmpDir);
    // Leftovers of a crashed rewrite: never under parquet/sessions, so readers never saw them. Only
    // files named as session-etl names them (never through a link: refuseLinks checked .tmp itself).
    for (const e of await readdir(layout.tmpDir, { withFileTypes: true })) {
      if (e.isFile() && TMP_FILE_NAME.test(e.name)) await unlink(join(layout.tmpDir, e.name)).catch(() => {});
    }
    const probe = await writeNewFile((suffix) => join(layout.tmpDir, `.probe-${process.pid}-${suffix}`), '', { mode: FILE_MODE });
    await rm(probe, { force: true });
    return created;
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

function translateOpenError(err: unknown, path: string, readOnly: boolean): Error {
  const msg = err instanceof Error ? err.message : String(err);
  if (/lock/i.test(msg) && /conflict|Could not set lock/i.test(msg)) {
    // DuckDB names the holder ("Conflicting lock is held in /usr/bin/node (PID 123)") and, when the
    // holder only reads, adds that the file could be opened read-only.
    const pid = /\(PID (\d+)\)/.exec(msg)?.[1];
    const program = /held in (.+?) \(PID/.exec(msg)?.[1];
    const holder = pid ? `pid ${pid}${program ? ` (${basename(program)})` : ''}` : 'another process';
    const byReader = !readOnly && /read-only mode/i.test(msg);
    const text = readOnly
      ? `${path} is open for writing by ${holder} (a session-etl run holds it while it runs, or a tool opened it read-write)`
      : byReader
        ? `${path} is held open by ${holder}, a reader (a BI tool, notebook or duckdb shell left connected?): DuckDB lets a run ` +
          'write the file only when no other process has it open. Close that connection, or pass --wait to wait until it closes; ' +
          'point BI tools at the Parquet dataset (parquet/sessions/), which a run never locks'
        : `${path} is open for writing by ${holder} (a tool that opened it read-write, or another session-etl run): ` +
          'close it, or pass --wait to wait until it closes';
    return new StoreBusyError(text, { cause: err, holder, byReader, ...(pid ? { pid: Number(pid) } : {}) });
  }
  if (/not a valid DuckDB database file|Invalid Input|not a DuckDB|unable to open|Corrupt|IO Error/i.test(msg)) {
    return new DataDirError(`${path} is not a session-etl DuckDB file (${firstLine(msg)}); choose another --data-dir or move it away`, {
      cause: err,
    });
  }
  return err instanceof Error ? err : new Error(msg);
}

function ignoreExists(err: unknown): false {
  if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
  throw err;
}

/** The shard a layout is the store of (parsed back from its directory), if any. */
function shardOfLayout(layout: StoreLayout): ShardId | undefined {
  const m = /^(\d+)-of-(\d+)$/.exec(basename(layout.storeDir));
  return layout.storeDir !== layout.dataDir && m ? { index: Number(m[1]), count: Number(m[2]) } : undefined;
}
