/**
 * The set-up most end-to-end test files share: one emulator for the file (started in beforeAll,
 * closed in afterAll), temporary directories removed at the end, and the environment that points
 * the CLI at the emulator and a data directory. Call it at a test file's top level.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';

export interface EmulatorFixture {
  /** The file's emulator (after beforeAll). */
  readonly emu: Emulator;
  /** A new temporary directory, removed after the file's tests. */
  tempDir(): Promise<string>;
  /** REPORTING_URL, REPORTING_API_KEY and SESSION_ETL_DATA_DIR for the CLI, plus `extra`. */
  env(dataDir: string, extra?: Record<string, string>): Record<string, string>;
}

export function useEmulator(options: EmulatorOptions, o: { prefix: string; beforeClose?: () => void | Promise<void> }): EmulatorFixture {
  let emu: Emulator | undefined;
  const dirs: string[] = [];
  beforeAll(async () => {
    emu = await startEmulator(options);
  });
  afterAll(async () => {
    await o.beforeClose?.();
    await emu?.close();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  return {
    get emu() {
      if (!emu) throw new Error('the emulator is started in beforeAll: use it inside a test');
      return emu;
    },
    async tempDir() {
      const d = await mkdtemp(join(tmpdir(), o.prefix));
      dirs.push(d);
      return d;
    },
    env(dataDir, extra = {}) {
      return { REPORTING_URL: this.emu.url, REPORTING_API_KEY: this.emu.apiKey, SESSION_ETL_DATA_DIR: dataDir, ...extra };
    },
  };
}

/**
 * An emulator for one test whose options only that test knows (its own faults or data): started,
 * handed to `fn`, and closed when `fn` ends, even by throwing.
 */
export async function withEmulator<T>(options: EmulatorOptions, fn: (emu: Emulator) => Promise<T>): Promise<T> {
  const emu = await startEmulator(options);
  try {
    return await fn(emu);
  } finally {
    await emu.close();
  }
}
