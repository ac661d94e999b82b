/**
 * One writer at a time: a lock directory holding `holder.json`, whose mtime the holder refreshes
 * every few seconds. It is stale when its holder is on this host and its pid is gone (a crash or
 * kill -9), or its heartbeat is older than `staleMs` (another host); a stale lock is renamed aside
 * before it is taken over, so that of two processes taking it over only one succeeds.
 * The one file lock: the token store's refreshes take it too (auth/file-token-store.ts).
 */
import { mkdir, readdir, readFile, rename, rm, stat, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { ExitCode } from '../errors.js';
import { realSleep, type Sleep } from '../util/sleep.js';
import { unguessable, UNGUESSABLE, writeNewFileAt } from '../util/temp-file.js';
import { DataDirError } from './errors.js';

export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
  command: string;
  /** The run holding the lock (absent for holders that are not runs, and in locks of older versions). */
  runId?: string;
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

interface LockOptions {
  command: string;
  /** The run taking the lock (written to holder.json, so that readers can name it). */
  runId?: string;
  wait?: boolean;
  /** Give up waiting after this long, ms (default: forever). */
  waitTimeoutMs?: number;
  /** Heartbeat older than this makes a remote holder's lock stale. Default 60 s. */
  staleMs?: number;
  pollMs?: number;
  sleep?: Sleep;
  signal?: AbortSignal;
  onWait?: (holder: LockHolder | undefined) => void;
}

export interface Lock {
  readonly path: string;
  /** The holder whose stale lock this one took over (a run killed or crashed), if any. */
  readonly tookOverFrom?: LockHolder;
  release(): Promise<void>;
}

const HOLDER = 'holder.json';

export async function acquireLock(path: string, opts: LockOptions): Promise<Lock> {
  const sleep = opts.sleep ?? realSleep;
  const staleMs = opts.staleMs ?? 60_000;
  const deadline = opts.waitTimeoutMs !== undefined ? Date.now() + opts.waitTimeoutMs : Infinity;
  let waited = false;
  let tookOverFrom: LockHolder | undefined;
  const me: LockHolder = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    command: opts.command,
    ...(opts.runId ? { runId: opts.runId } : {}),
  };
  for (;;) {
    // Prepared aside and renamed into place (atomic; it fails while another lock is there), so a lock
    // never exists without its holder file. The aside name is unguessable and the holder file created
    // exclusively (util/temp-file.ts): nothing planted in the data directory is ever written through.
    const staging = `${path}.new-${process.pid}-${Date.now()}-${unguessable()}`;
    try {
      await mkdir(staging, { mode: 0o755 });
      await writeNewFileAt(join(staging, HOLDER), JSON.stringify(me), { mode: 0o644 });
      await rename(staging, path);
      await removeLeftovers(path);
      return holdLock(path, tookOverFrom);
    } catch (err) {
      await rm(staging, { recursive: true, force: true }).catch(() => {});
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
        throw new DataDirError(`data directory ${dirname(path)} is not writable (${code}); choose another --data-dir or fix its permissions`, {
          cause: err,
        });
      }
      if (code !== 'EEXIST' && code !== 'ENOTEMPTY') throw err;
    }
    const holder = await readHolder(path);
    if (await isStale(path, holder, staleMs)) {
      if ((await takeOver(path, holder)) && holder) tookOverFrom = holder;
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

/** Removes what writers killed while taking the lock left beside it (their pid is gone). */
async function removeLeftovers(path: string): Promise<void> {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  for (const n of await readdir(dir).catch(() => [] as string[])) {
    const m = n.startsWith(prefix) ? new RegExp(`^(?:new|stale)-(\\d+)-\\d+(?:-${UNGUESSABLE})?$`).exec(n.slice(prefix.length)) : null;
    if (m && !pidAlive(Number(m[1]))) await rm(join(dir, n), { recursive: true, force: true }).catch(() => {});
  }
}

/**
 * Locks this process holds (resolved paths). One naming this host and pid that is not among them was
 * left by an earlier process with the same pid (pid 1 in containers; a retried Kubernetes pod keeps its host name).
 */
const heldHere = new Set<string>();

function holdLock(path: string, tookOverFrom: LockHolder | undefined): Lock {
  heldHere.add(resolve(path));
  const beat = setInterval(() => {
    const t = new Date();
    utimes(join(path, HOLDER), t, t).catch(() => {});
  }, 5_000);
  beat.unref();
  let released = false;
  return {
    path,
    ...(tookOverFrom ? { tookOverFrom } : {}),
    async release() {
      if (released) return;
      released = true;
      clearInterval(beat);
      await rm(path, { recursive: true, force: true });
      heldHere.delete(resolve(path));
    },
  };
}

const HolderSchema = z.object({ pid: z.number().int(), host: z.string(), startedAt: z.string(), command: z.string(), runId: z.string().optional() });

/** The lock's holder; undefined when there is none, or its file is not one session-etl wrote (debris, taken over at once). */
export async function readHolder(path: string): Promise<LockHolder | undefined> {
  try {
    const parsed = HolderSchema.safeParse(JSON.parse(await readFile(join(path, HOLDER), 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** `dead` only for a holder on this host whose pid is gone; one on another host is taken at its word. */
export function holderState(holder: LockHolder): 'alive' | 'dead' {
  return holder.host === hostname() && !pidAlive(holder.pid) ? 'dead' : 'alive';
}

/** Whether a process of this host is alive (EPERM: it is, another user's). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function isStale(path: string, holder: LockHolder | undefined, staleMs: number): Promise<boolean> {
  if (holder && holder.host === hostname()) return holder.pid === process.pid ? !heldHere.has(resolve(path)) : !pidAlive(holder.pid);
  // No readable holder file: a lock is only ever created with one, so this one is debris.
  if (!holder) return true;
  // A holder on another host: judge by the heartbeat.
  try {
    return Date.now() - (await stat(join(path, HOLDER))).mtimeMs > staleMs;
  } catch {
    return false;
  }
}

/** Moves a stale lock aside; if what was moved is not the lock judged stale, puts it back. True when it was removed. */
async function takeOver(path: string, judged: LockHolder | undefined): Promise<boolean> {
  const aside = `${path}.stale-${process.pid}-${Date.now()}`;
  try {
    await rename(path, aside);
  } catch {
    return false; // someone else took it over first: try again from the top
  }
  if (JSON.stringify(await readHolder(aside)) !== JSON.stringify(judged)) {
    await rename(aside, path).catch(() => {});
    return false;
  }
  await rm(aside, { recursive: true, force: true });
  return true;
}
