/**
 * The token store's lock is the data directory's (store/lock.ts): a refresh whose holder was killed
 * (kill -9, a crash) on this host leaves a lock that the next refresh takes over at once, rather than
 * waiting for it to go stale and failing meanwhile.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileTokenStore } from '../../src/auth/file-token-store.js';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('FileTokenStore.withLock', () => {
  it('a lock left by a killed refresh on this host is taken over at once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-token-lock-'));
    dirs.push(dir);
    const path = join(dir, 'tokens.json');
    // The lock a killed process left: its holder names this host and a pid that has exited.
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    await mkdir(`${path}.lock`);
    await writeFile(join(`${path}.lock`, 'holder.json'), JSON.stringify({ pid: dead, host: hostname(), startedAt: new Date().toISOString(), command: 'token refresh' }));
    const t0 = Date.now();
    const got = await new FileTokenStore(path).withLock(async () => 'refreshed');
    expect(got).toBe('refreshed');
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(existsSync(`${path}.lock`)).toBe(false);
  }, 60_000);

});
