/**
 * The largest key, client secret or token accepted: 4 KiB. Real ones are far shorter (API keys are
 * tens of characters, JWT access tokens one or two KiB); a larger value is a wrong file (a
 * certificate, a log, a binary) or a hostile answer, and is refused where it is read, without any
 * of it being shown.
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
 * The key in `path`, whitespace around it trimmed. Reads at most 4 KiB and a little more, so a huge
 * file (or an endless pipe) is refused without being read whole. Throws SecretFileError: unreadable,
 * a device (/dev/zero, a terminal), readable or writable by others (othersCanRead), empty, or larger
 * than MAX_SECRET_BYTES.
 */
export function readSecretFile(path: string): string {
  const limit = MAX_SECRET_BYTES + FILE_SLACK_BYTES;
  const buf = Buffer.alloc(limit + 1);
  let length = 0;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new SecretFileError(`cannot be read: ${readProblem(err)}`, code);
  }
  try {
    // The kind and mode of the file opened (not of a path that could be swapped meanwhile), before any of it is read.
    const stat = fstatSync(fd);
    // A device (/dev/zero, a terminal) holds no key: its mode says nothing of one, and reading a terminal would wait for ever.
    if (stat.isCharacterDevice() || stat.isBlockDevice()) {
      throw new SecretFileError(`is a ${stat.isBlockDevice() ? 'block' : 'character'} device, not a file holding a key: name the file the key is in`, 'EDEVICE');
    }
    const problem = othersCanRead(stat.mode, path);
    if (problem) throw new SecretFileError(problem, 'EPERM_MODE');
    for (;;) {
      const n = readSync(fd, buf, length, buf.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > limit) break;
    }
  } catch (err) {
    if (err instanceof SecretFileError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new SecretFileError(`cannot be read: ${readProblem(err)}`, code);
  } finally {
    closeSync(fd);
  }
  const key = length > limit ? '' : buf.subarray(0, length).toString('utf8').trim();
  if (length > limit || secretTooLarge(key)) {
    throw new SecretFileError(`holds more than ${MAX_SECRET_TEXT}, more than any key: is it the right file? (nothing of it is shown)`);
  }
  if (!key) throw new SecretFileError('is empty');
  return key;
}

/**
 * Why a key file of `mode` is refused, or null: a file that users other than its owner and its
 * group can read (or write) holds a key anyone on the machine can take (or replace). The group may
 * read it: that is how a service's group, or Kubernetes' `fsGroup` (mode 0440 on a mounted Secret),
 * shares a key with the process. Not on Windows, whose modes say nothing of this.
 */
export function othersCanRead(mode: number, path: string, what = 'a key file'): string | null {
  if (process.platform === 'win32' || (mode & 0o006) === 0) return null;
  const octal = (mode & 0o777).toString(8).padStart(4, '0');
  return (
    `is ${mode & 0o004 ? 'readable' : 'writable'} by every user of this machine (mode ${octal}): ${what} must be readable by its owner only (or its group); ` +
    `run chmod 600 ${path}${what === 'a key file' ? " (a Kubernetes Secret volume: give it defaultMode: 0400)" : ''}`
  );
}
