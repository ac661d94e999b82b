/**
 * A lock left by an earlier process that had this process's pid on this host (in a container every
 * process is pid 1; a Kubernetes Job's retried pod keeps the dead pod's host name) is stale: taken
 * over, not "held by a live run" until the next CronJob run. A lock this process holds stays held.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireLock, LockHeldError } from '../../src/store/lock.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('lock held under our own pid', () => {
  it('takes over a lock naming this host and pid that this process does not hold', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-lock-'));
    dirs.push(dir);
    const path = join(dir, '.session-etl.lock');
    const left = { pid: process.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', command: 'export (run export-x)', runId: 'export-x' };
    await mkdir(path);
    await writeFile(join(path, 'holder.json'), JSON.stringify(left));
    const lock = await acquireLock(path, { command: 'export (run export-y)', runId: 'export-y' });
    expect(lock.tookOverFrom).toEqual(left);
    // Held by this process now: a second taker is refused.
    await expect(acquireLock(path, { command: 'export (run export-z)' })).rejects.toBeInstanceOf(LockHeldError);
    await lock.release();
    const again = await acquireLock(path, { command: 'export (run export-z)' });
    await again.release();
  });
});
