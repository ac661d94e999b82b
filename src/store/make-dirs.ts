/**
 * `mkdir -p` that always ends. Node's recursive mkdir loops for ever, at full CPU, on a path under a
 * file system that refuses new directories with ENOENT although the parent exists (`/proc/foo`:
 * creating it fails with ENOENT, so Node creates the parent, which exists, and tries again). Here
 * the first existing ancestor is found first, and each missing directory below it is created once,
 * without `recursive`: a refusal is an error, never a retry.
 */
import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/** A directory could not be created; `code` as the system said it, `at` the directory that failed. */
export class MakeDirsError extends Error {
  override readonly name = 'MakeDirsError';
  constructor(
    message: string,
    readonly code: string,
    readonly at: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Creates `dir` and its missing parents with `mode`; returns the first directory it created (as
 * `mkdir(dir, { recursive: true })` does), or undefined when `dir` was there already. Throws
 * MakeDirsError: ENOTDIR when a file stands on the path, ENOENT when a directory cannot be created
 * under an existing parent (a special file system such as /proc or /sys), or the system's code
 * (EACCES, EROFS, ...).
 */
export async function makeDirs(dir: string, mode: number): Promise<string | undefined> {
  const missing: string[] = [];
  for (let d = resolve(dir); ; d = dirname(d)) {
    const st = await stat(d).catch((err: NodeJS.ErrnoException) => {
      // Missing, or under a file (ENOTDIR: that file is found further up).
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
      throw new MakeDirsError(`${d}: ${err.code ?? err.message}`, err.code ?? 'EIO', d, { cause: err });
    });
    if (st) {
      if (!st.isDirectory()) throw new MakeDirsError(`${d} is not a directory`, 'ENOTDIR', d);
      break;
    }
    missing.unshift(d);
    if (dirname(d) === d) break; // the root itself is missing: nothing to stand on
  }
  for (const d of missing) {
    try {
      await mkdir(d, { mode });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      // Made meanwhile by another process: fine when it is a directory.
      if (code === 'EEXIST' && (await stat(d).then((s) => s.isDirectory(), () => false))) continue;
      throw new MakeDirsError(`${d}: ${code}`, code, d, { cause: err });
    }
  }
  return missing[0];
}
