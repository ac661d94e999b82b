/**
 * Files session-etl writes are created exclusively (O_EXCL), never through a symbolic link (O_NOFOLLOW), under a
 * name with an unguessable part: a user who can write the directory (node_exporter's textfile directory often is
 * shared) cannot plant a link there and have the service overwrite its target (issue 28).
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/** 64 random bits as 16 hex digits. */
export function unguessable(): string {
  return randomBytes(8).toString('hex');
}

/** Matches unguessable(), for the patterns that recognise our own leftovers. */
export const UNGUESSABLE = '[0-9a-f]{16}';

/** `mode` as the umask allows it, or exactly with `exactMode`; `sync`: fsync before closing. */
type WriteNewOptions = { mode: number; exactMode?: boolean; sync?: boolean };

/**
 * Writes `data` to a new file at exactly `path` (fixed names: the lock's holder file, the demo's marker); anything
 * already there, a planted link included, fails with EEXIST. A failure after the file was created removes it.
 */
export async function writeNewFileAt(path: string, data: string | Uint8Array, o: WriteNewOptions): Promise<void> {
  const fh = await open(path, CREATE_NEW, o.mode);
  try {
    try {
      if (o.exactMode) await fh.chmod(o.mode);
      await fh.writeFile(data);
      if (o.sync) await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (err) {
    await rm(path, { force: true }).catch(() => {});
    throw err;
  }
}

/**
 * writeNewFileAt at `nameOf(unguessable())`, returning the path. Something already at the name (a leftover or a
 * coincidence: it cannot have been guessed) draws another suffix; a few in a row is an error.
 */
export async function writeNewFile(nameOf: (suffix: string) => string, data: string | Uint8Array, o: WriteNewOptions): Promise<string> {
  for (let tries = 1; ; tries++) {
    const path = nameOf(unguessable());
    try {
      await writeNewFileAt(path, data, o);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && tries < 4) continue;
      throw err;
    }
    return path;
  }
}

/**
 * Replaces `path` with `data` atomically, the project's one atomic write: a new file `.<name>.<16 hex>.tmp` in
 * `tmpDir` (default: the file's directory, same file system), fsynced, renamed over `path`. A reader sees the old
 * file or the new one whole; a failure removes the temporary file. The rename replaces a link at `path`, not its target.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, opts: { tmpDir?: string; mode: number; exactMode?: boolean }): Promise<void> {
  const dir = opts.tmpDir ?? dirname(path);
  const tmp = await writeNewFile((suffix) => join(dir, `.${basename(path)}.${suffix}.tmp`), data, { mode: opts.mode, sync: true, ...(opts.exactMode ? { exactMode: true } : {}) });
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
}

/** A stream (a download) to a new file at `path`, as writeNewFileAt; a failure part-way removes the file. */
export async function writeNewStream(path: string, body: Readable, mode: number): Promise<void> {
  const fh = await open(path, CREATE_NEW, mode);
  try {
    await pipeline(body, fh.createWriteStream());
  } catch (err) {
    await rm(path, { force: true }).catch(() => {});
    throw err;
  } finally {
    await fh.close().catch(() => {});
  }
}

/** A directory other users could write: whoever can plant a file or a link in it chooses what we read and overwrite. */
export class SharedDirectoryError extends Error {
  override readonly name = 'SharedDirectoryError';
}

/**
 * Refuses a directory writable by everyone, or by its group while it belongs to another user (g+w on our own is
 * our choice: a private group). A missing directory is fine (we make it).
 */
export async function refuseSharedDirectory(dir: string, what: string): Promise<void> {
  let st;
  try {
    st = await stat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const mode = st.mode & 0o7777;
  const uid = process.getuid?.();
  const ours = uid === undefined || st.uid === uid;
  const reason =
    mode & 0o002
      ? `can be written by every user (mode ${(mode & 0o777).toString(8)})`
      : mode & 0o020 && !ours
        ? `belongs to another user (uid ${st.uid}) and its group can write it (mode ${(mode & 0o777).toString(8)})`
        : null;
  if (reason === null) return;
  throw new SharedDirectoryError(
    `the ${what} ${dir} ${reason}: another user could plant links there and have session-etl overwrite their targets; ` +
      `use a directory of your own (chmod o-w,g-w ${dir}, or another --data-dir)`,
  );
}
