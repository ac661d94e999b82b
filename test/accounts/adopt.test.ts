/**
 * `accounts adopt` when a move fails part way (a full disk, a file another tool holds): everything
 * moved is moved back, the data directory is as before, and adopting again once the cause is gone
 * works. The failure is injected into the rename (the one thing a test cannot make fail as root).
 */
import { readdir, rename, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adoptDataDir, AdoptError } from '../../src/accounts/adopt.js';
import { runBackfill } from '../../src/pipeline/run.js';
import { useEmulator } from '../helpers/emulator-fixture.js';

const D = 86_400;
const FROM = 1767225600; // 2026-01-01
const NOW = FROM + 6 * D;
const fx = useEmulator({ seed: 31, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-adopt-' });

/** Every file and directory under `root` with its size (directories: -1), sorted. */
async function tree(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        out.push(`${relative(root, p)}/`);
        await walk(p);
      } else out.push(`${relative(root, p)} ${(await stat(p)).size}`);
    }
  };
  await walk(root);
  return out.sort();
}

describe('accounts adopt, failing part way', () => {
  it('moves back everything it moved, leaves the directory as before, and succeeds when run again', async () => {
    const dataDir = join(await fx.tempDir(), 'data');
    await runBackfill({ reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', now: () => NOW * 1000, sleep: async () => {}, from: FROM, to: FROM + 4 * D });
    const before = await tree(dataDir);
    expect(before.filter((f) => /date=\d{4}-\d\d-\d\d\/$/.test(f))).toHaveLength(4);

    // The third partition's move fails: the files and two partitions were moved by then.
    let partitionMoves = 0;
    const failing: typeof rename = async (from, to) => {
      if (/date=/.test(String(from)) && ++partitionMoves === 3) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      return rename(from, to);
    };
    const err = await adoptDataDir(dataDir, 'acme', { rename: failing }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AdoptError);
    expect((err as Error).message).toMatch(/^accounts adopt acme failed part way \(ENOSPC: no space left on device\); everything moved was moved back/);
    // Before the fix the database file and two partitions stayed under accounts/acme, the rest at the top.
    expect(await tree(dataDir)).toEqual(before);

    const r = await adoptDataDir(dataDir, 'acme');
    expect(r.partitions).toBe(4);
    expect((await tree(dataDir)).filter((f) => f.startsWith('accounts/acme/sessions.duckdb'))).toHaveLength(1);
  });
});
