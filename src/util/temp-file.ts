/**
 * Creating the files session-etl writes before renaming them into place (and the other files it
 * writes under names of its own), so that nobody else chooses where the bytes go: a file is
 * created exclusively (O_CREAT | O_EXCL) and never through a symbolic link (O_NOFOLLOW; O_EXCL
 * already refuses a link at the name), under a name with an unguessable part. A user who can
 * write the directory (node_exporter's textfile directory often is shared) can no longer plant a
 * link at the name and have the service overwrite the file it points to (issue 28).
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Write-only, created here, failing on anything already at the name (a link included). */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/** The unguessable part of a name: 16 hex digits (64 random bits). */
export function unguessable(): string {
  return randomBytes(8).toString('hex');
}

/** Matches what unguessable() returns, for the patterns that recognise our own leftovers. */
export const UNGUESSABLE = '[0-9a-f]{16}';

/** Opens a new file for writing; fails (EEXIST) when anything, a link included, is at `path`. */
export function openNew(path: string, mode: number): Promise<FileHandle> {
  return open(path, CREATE_NEW, mode);
}

export interface WriteNewOptions {
  /** The file's mode, as the umask allows it; exactly this mode with `exactMode`. */
  mode: number;
  exactMode?: boolean;
  /** fsync before closing. */
  sync?: boolean;
}

/**
 * Writes `data` to a new file at exactly `path` — for the files of fixed names (the lock's holder
 * file, the demo's marker): created exclusively, never through a link, so that anything already at
 * the name (a planted link included) fails with EEXIST and what it points to is never written.
 * A failure after the file was created removes it.
 */
export async function writeNewFileAt(path: string, data: string | Uint8Array, o: WriteNewOptions): Promise<void> {
  const fh = await openNew(path, o.mode);
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
 * Writes `data` to a file created here at the path `nameOf(suffix)` builds around an unguessable
 * suffix, and returns that path. Should something already be at the name (it cannot have been
 * guessed, so a leftover or a coincidence), another suffix is drawn; a few in a row is an error.
 * A failure after the file was created removes it.
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
 * Replaces `path` with `data` atomically — the one atomic write of the project (the store's
 * snapshots, the metrics file, the token store, the bucket cache's manifest): written to a new file
 * (`.<name>.<16 hex>.tmp` in `tmpDir`, by default the file's own directory, on the same file
 * system) created exclusively, never through a link, with `mode` (as the umask allows it, or
 * exactly with `exactMode`), fsynced, then renamed over `path`. A reader sees the old file or the
 * new one whole; a failure leaves the old one and removes the temporary file. The rename replaces a
 * link at `path` itself, never what it points to.
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

/**
 * Writes a stream (a download) to a file created here at `path`, exclusively and never through a
 * link: anything already at the name, a planted link included, fails with EEXIST and nothing is
 * written. A failure part-way removes the file.
 */
export async function writeNewStream(path: string, body: Readable, mode: number): Promise<void> {
  const fh = await openNew(path, mode);
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
 * Refuses a directory that other users can write: writable by everyone (o+w), or by its group
 * while it belongs to another user (g+w on a directory of our own is our choice: a private group).
 * A missing directory is fine (we make it). `what` names it in the message.
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
