import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_SECRET_BYTES, readSecretFile, SecretFileError, secretTooLarge } from '../../src/util/secret-size.js';

const dir = mkdtempSync(join(tmpdir(), 'session-etl-secret-size-'));
function keyFile(content: string | Buffer): string {
  const p = join(dir, `k-${Math.random().toString(36).slice(2)}`);
  writeFileSync(p, content, { mode: 0o600 });
  return p;
}
function reason(path: string): string {
  try {
    readSecretFile(path);
  } catch (err) {
    expect(err).toBeInstanceOf(SecretFileError);
    return (err as SecretFileError).reason;
  }
  throw new Error('the file was accepted');
}

describe('readSecretFile: a key of at most 4 KiB, whitespace around it dropped', () => {
  it('a key of exactly 4,096 bytes with a final newline is read; one byte more is refused', () => {
    const key = 'k'.repeat(MAX_SECRET_BYTES);
    expect(readSecretFile(keyFile(`${key}\n`))).toBe(key);
    expect(reason(keyFile(`${key}x\n`))).toMatch(/^holds more than 4 KiB \(4,096 bytes\)/);
  });

  it('counts bytes, not characters (a multi-byte key)', () => {
    expect(secretTooLarge('é'.repeat(2048))).toBe(false);
    expect(secretTooLarge('é'.repeat(2049))).toBe(true);
  });

  it('a 100 KB file is refused without reading it whole; a device (/dev/zero, endless, mode 0666) is refused as a device, before its mode or any read', () => {
    expect(reason(keyFile('B'.repeat(100_000)))).toMatch(/^holds more than 4 KiB/);
    if (existsSync('/dev/zero')) {
      expect(reason('/dev/zero')).toBe('is a character device, not a file holding a key: name the file the key is in');
    }
  });

  it('an empty file, a missing file and a directory', () => {
    expect(reason(keyFile(' \n\t\n'))).toBe('is empty');
    expect(reason(join(dir, 'missing'))).toBe('cannot be read: no such file');
    expect(reason(dir)).toBe('cannot be read: it is a directory, not a file');
  });
});
