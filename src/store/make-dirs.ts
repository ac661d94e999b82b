/**
 * `mkdir -p` that always ends: Node's recursive mkdir loops for ever where a file system refuses new
 * directories with ENOENT although the parent exists (`/proc/foo`). Here each missing directory below
 * the first existing ancestor is created once: a refusal is an error, never a retry.
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
 * Creates `dir` and its missing parents with `mode`; returns the first created (as recursive mkdir
 * does), or undefined. Throws MakeDirsError: ENOTDIR (a file on the path), ENOENT (/proc, /sys), or the system's code.
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
