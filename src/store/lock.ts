/**
 * One writer at a time: an inter-process lock on the data directory.
 *
 * The lock is a directory created with mkdir (atomic on every local file system) holding
 * `holder.json` (pid, host, start time, command). The holder refreshes the file's mtime every few
 * seconds. A lock is stale when its holder is on this host and its pid is gone (a crash or kill -9:
 * detected at once), or when its heartbeat is older than `staleMs` (a holder on another host).
 * A stale lock is taken over by renaming it aside first, so that of two processes taking it over
 * only one succeeds.
 *
 * Written here rather than with proper-lockfile (which the token store uses) because it knows only mtime
 * staleness: it cannot name the holder or see at once that a local holder has died.
 */
import { mkdir, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ExitCode } from '../cli/exit-codes.js';
import { realSleep, type Sleep } from '../util/sleep.js';

export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
  command: string;
}

export class LockHeldError extends Error {
  override readonly name = 'LockHeldError';
  readonly exitCode = ExitCode.locked;
  constructor(
    readonly lockPath: string,
    readonly holder: LockHolder | undefined,
  ) {
    super(
      holder
        ? `another session-etl run holds ${lockPath}: pid ${holder.pid} on ${holder.host}, ${holder.command}, since ${holder.startedAt}. ` +
            'Wait for it to finish, or pass --wait to queue behind it'
        : `another session-etl run holds ${lockPath}. Wait for it to finish, or pass --wait to queue behind it`,
    );
  }
}

export interface LockOptions {
  command: string;
  /** Wait for the lock instead of failing at once. */
  wait?: boolean;
  /** Give up waiting after this long, ms (default: forever). */
  waitTimeoutMs?: number;
  /** Heartbeat older than this makes a remote holder's lock stale. Default 60 s. */
  staleMs?: number;
  pollMs?: number;
  sleep?: Sleep;
  signal?: AbortSignal;
  /** Called once when the lock is found held and we start waiting. */
  onWait?: (holder: LockHolder | undefined) => void;
}

export interface Lock {
  readonly path: string;
  release(): Promise<void>;
}

const HOLDER = 'holder.json';

export async function acquireLock(path: string, opts: LockOptions): Promise<Lock> {
  const sleep = opts.sleep ?? realSleep;
  const staleMs = opts.staleMs ?? 60_000;
  const deadline = opts.waitTimeoutMs !== undefined ? Date.now() + opts.waitTimeoutMs : Infinity;
  let waited = false;
  const me: LockHolder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), command: opts.command };
  for (;;) {
    try {
      await mkdir(path);
      await writeFile(join(path, HOLDER), JSON.stringify(me), { mode: 0o644 });
      return holdLock(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = await readHolder(path);
    if (await isStale(path, holder, staleMs)) {
      await takeOver(path, holder);
      continue;
    }
    if (!opts.wait || Date.now() > deadline) throw new LockHeldError(path, holder);
    if (!waited) {
      waited = true;
      opts.onWait?.(holder);
    }
    await sleep(opts.pollMs ?? 500, opts.signal);
  }
}

function holdLock(path: string): Lock {
  const beat = setInterval(() => {
    const t = new Date();
    utimes(join(path, HOLDER), t, t).catch(() => {});
  }, 5_000);
  beat.unref();
  let released = false;
  return {
    path,
    async release() {
      if (released) return;
      released = true;
      clearInterval(beat);
      await rm(path, { recursive: true, force: true });
    },
  };
}

export async function readHolder(path: string): Promise<LockHolder | undefined> {
  try {
    return JSON.parse(await readFile(join(path, HOLDER), 'utf8')) as LockHolder;
  } catch {
    return undefined;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function isStale(path: string, holder: LockHolder | undefined, staleMs: number): Promise<boolean> {
  if (holder && holder.host === hostname()) return !pidAlive(holder.pid);
  // Unknown holder (holder.json not written yet, or another host): judge by the heartbeat.
  try {
    const { stat } = await import('node:fs/promises');
    const st = await stat(holder ? join(path, HOLDER) : path);
    return Date.now() - st.mtimeMs > staleMs;
  } catch {
    return false;
  }
}

/** Moves a stale lock aside; if what was moved is not the lock judged stale, puts it back. */
async function takeOver(path: string, judged: LockHolder | undefined): Promise<void> {
  const aside = `${path}.stale-${process.pid}-${Date.now()}`;
  try {
    await rename(path, aside);
  } catch {
    return; // someone else took it over first: try again from the top
  }
  const moved = await readHolder(aside);
  const same = JSON.stringify(moved) === JSON.stringify(judged);
  if (!same) {
    await rename(aside, path).catch(() => {});
    return;
  }
  await rm(aside, { recursive: true, force: true });
}
