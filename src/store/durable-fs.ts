/** File-system steps the store makes durable: existence, the head of a file, fsync of files and directories. */
import { open, rename, rm, stat } from 'node:fs/promises';
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
 * Replaces `path` with `text` atomically: written to `tmp` (on the same file system) with `mode`
 * (as the umask allows it, or exactly with `exactMode`), fsynced, then renamed over `path`. A reader sees the old file or the new one
 * whole; a failure leaves the old one and removes `tmp`.
 */
export async function writeFileAtomic(path: string, text: string, opts: { tmp: string; mode: number; exactMode?: boolean }): Promise<void> {
  try {
    const fh = await open(opts.tmp, 'w', opts.mode);
    try {
      if (opts.exactMode) await fh.chmod(opts.mode);
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(opts.tmp, path);
  } catch (err) {
    await rm(opts.tmp, { force: true }).catch(() => {});
    throw err;
  }
}
