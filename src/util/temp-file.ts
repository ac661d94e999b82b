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
import { open, rm, type FileHandle } from 'node:fs/promises';

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
 * Writes `data` to a file created here at the path `nameOf(suffix)` builds around an unguessable
 * suffix, and returns that path. Should something already be at the name (it cannot have been
 * guessed, so a leftover or a coincidence), another suffix is drawn; a few in a row is an error.
 * A failure after the file was created removes it.
 */
export async function writeNewFile(nameOf: (suffix: string) => string, data: string | Uint8Array, o: WriteNewOptions): Promise<string> {
  for (let tries = 1; ; tries++) {
    const path = nameOf(unguessable());
    let fh: FileHandle;
    try {
      fh = await openNew(path, o.mode);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && tries < 4) continue;
      throw err;
    }
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
    return path;
  }
}
