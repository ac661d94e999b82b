/** File-system steps the store makes durable: existence and size, the head of a file, fsync of files and directories. */
import { open, stat } from 'node:fs/promises';
import { FILE_MODE } from './layout.js';

export function exists(p: string): Promise<boolean> {
  return stat(p).then(() => true, () => false);
}

/** A file's size in bytes; 0 when it is not there (or cannot be read). */
export function sizeOf(p: string): Promise<number> {
  return stat(p).then((s) => s.size, () => 0);
}

/** The first `bytes` of a file (fewer when it is shorter). */
export async function fileHead(path: string, bytes = 16): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const b = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(b, 0, bytes, 0);
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

export { writeFileAtomic } from '../util/temp-file.js';
