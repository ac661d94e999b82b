/** File-system steps the store makes durable: existence, the head of a file, fsync of files and directories. */
import { open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeNewFile } from '../util/temp-file.js';
import { FILE_MODE } from './layout.js';

export async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/** The first 16 bytes of a file (fewer when it is shorter). */
export async function fileHead(path: string): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const b = Buffer.alloc(16);
    const { bytesRead } = await fh.read(b, 0, 16, 0);
    return b.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** fsync; with restrictMode, also takes from a file DuckDB created what FILE_MODE does not allow (whatever the umask). */
export async function fsyncFile(path: string, opts: { restrictMode?: boolean } = {}): Promise<void> {
  const fh = await open(path, 'r+');
  try {
    if (opts.restrictMode) {
      const mode = (await fh.stat()).mode & 0o777;
      if (mode & ~FILE_MODE) await fh.chmod(mode & FILE_MODE);
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function fsyncDir(path: string): Promise<void> {
  try {
    const fh = await open(path, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Some file systems refuse fsync on directories; the rename itself is still atomic.
  }
}

/**
 * Replaces `path` with `text` atomically: written to a temporary file (`.<name>.<16 hex>.tmp` in
 * `tmpDir`, by default the file's own directory, on the same file system) with `mode` (as the
 * umask allows it, or exactly with `exactMode`), fsynced, then renamed over `path`. A reader sees
 * the old file or the new one whole; a failure leaves the old one and removes the temporary file.
 * The temporary file is created exclusively under an unguessable name, never through a link
 * (util/temp-file.ts); the rename replaces a link at `path` itself, never what it points to.
 */
export async function writeFileAtomic(path: string, text: string, opts: { tmpDir?: string; mode: number; exactMode?: boolean }): Promise<void> {
  const dir = opts.tmpDir ?? dirname(path);
  const tmp = await writeNewFile((suffix) => join(dir, `.${basename(path)}.${suffix}.tmp`), text, { mode: opts.mode, sync: true, ...(opts.exactMode ? { exactMode: true } : {}) });
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
}
