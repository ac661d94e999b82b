/**
 * The largest key, client secret or token accepted: 4 KiB (JWT access tokens are one or two KiB). A larger value is
 * a wrong file or a hostile answer, refused where it is read, none of it shown.
 */
import { readProblem } from './read-problem.js';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

export const MAX_SECRET_BYTES = 4096;

/** "4 KiB (4,096 bytes)": the bound as messages name it. */
export const MAX_SECRET_TEXT = `4 KiB (${MAX_SECRET_BYTES.toLocaleString('en-US')} bytes)`;

export function secretTooLarge(value: string): boolean {
  // Most values are ASCII: the length is a lower bound of the byte count, and cheap.
  return value.length > MAX_SECRET_BYTES || Buffer.byteLength(value, 'utf8') > MAX_SECRET_BYTES;
}

/** Room for the whitespace around a key in its file (a final newline, an editor's padding). */
const FILE_SLACK_BYTES = 1024;

/** Why a key file gave no key; `reason` completes "its key file PATH …" and never quotes the file. */
export class SecretFileError extends Error {
  override readonly name = 'SecretFileError';
  constructor(readonly reason: string, readonly code?: string) {
    super(reason);
  }
}

/**
 * The key in `path`, trimmed. Reads a little more than 4 KiB at most (an endless pipe is refused unread). Throws
 * SecretFileError: unreadable, a device, readable or writable by others (othersCanRead), empty, or too large.
 */
export function readSecretFile(path: string): string {
  const limit = MAX_SECRET_BYTES + FILE_SLACK_BYTES;
  const buf = Buffer.alloc(limit + 1);
  let length = 0;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    // The kind and mode of the file opened (not of a path that could be swapped meanwhile), before any of it is read.
    const stat = fstatSync(fd);
    // A device (/dev/zero, a terminal) holds no key: its mode says nothing of one, and reading a terminal would wait for ever.
    if (stat.isCharacterDevice() || stat.isBlockDevice()) {
      throw new SecretFileError(`is a ${stat.isBlockDevice() ? 'block' : 'character'} device, not a file holding a key: name the file the key is in`, 'EDEVICE');
    }
    const problem = othersCanRead(stat.mode, path);
    if (problem) throw new SecretFileError(problem, 'EPERM_MODE');
    for (let n = 1; n > 0 && length <= limit; length += n) n = readSync(fd, buf, length, buf.length - length, null);
  } catch (err) {
    if (err instanceof SecretFileError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new SecretFileError(`cannot be read: ${readProblem(err)}`, code);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const key = length > limit ? '' : buf.subarray(0, length).toString('utf8').trim();
  if (length > limit || secretTooLarge(key)) {
    throw new SecretFileError(`holds more than ${MAX_SECRET_TEXT}, more than any key: is it the right file? (nothing of it is shown)`);
  }
  if (!key) throw new SecretFileError('is empty');
  return key;
}

/**
 * Why a key file of `mode` is refused (others can read or write it), or null. The group may read it: that is how
 * Kubernetes' `fsGroup` (0440 on a mounted Secret) shares a key. Not on Windows, whose modes say nothing of this.
 */
export function othersCanRead(mode: number, path: string, what = 'a key file'): string | null {
  if (process.platform === 'win32' || (mode & 0o006) === 0) return null;
  const octal = (mode & 0o777).toString(8).padStart(4, '0');
  return (
    `is ${mode & 0o004 ? 'readable' : 'writable'} by every user of this machine (mode ${octal}): ${what} must be readable by its owner only (or its group); ` +
    `run chmod 600 ${path}${what === 'a key file' ? " (a Kubernetes Secret volume: give it defaultMode: 0400)" : ''}`
  );
}
