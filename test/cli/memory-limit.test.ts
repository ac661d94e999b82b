/**
 * The memory budget's setting (issue 31): `--memory-limit`, SESSION_ETL_MEMORY_LIMIT and config
 * `memoryLimit` reach `config` and the run; a budget below the minimum is refused at start (exit 2)
 * with nothing written; a value that is not a size is refused naming where it came from. (The
 * container's limit: test/cli/memory-cgroup.test.ts, in a real cgroup.)
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIN_BUDGET, MiB, readCgroupLimit } from '../../src/config/memory-budget.js';
import { runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;
const fx = useEmulator({ seed: 311, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 50 }, { prefix: 'session-etl-memory-limit-' });
// This machine's own container limit, if it has one smaller than the settings below, wins: the tests then say less.
const container = readCgroupLimit()?.bytes ?? Infinity;

describe('the memory budget from a setting', () => {
  it('config shows the budget, where it came from and the split; the setting from the environment', async () => {
    const r = await runCli(['config'], { SESSION_ETL_MEMORY_LIMIT: '512MiB' });
    expect(r.code, r.stderr).toBe(0);
    if (container >= 512 * MiB) expect(r.stdout).toMatch(/^memory budget: 512 MiB from SESSION_ETL_MEMORY_LIMIT.*; DuckDB \d+ MiB, answers in flight \d+ MiB/m);
    expect(r.stdout).toMatch(/^memoryLimit +"512MiB" +env$/m);
    const none = await runCli(['config', '--json']);
    const memory = (JSON.parse(none.stdout) as { memory: { source: string; bytes: number } }).memory;
    if (container === Infinity) expect(memory).toMatchObject({ source: 'default', bytes: 300e6 });
  });

  it('a run with a budget below the minimum refuses at start (exit 2), naming the minimum and the flag; nothing is written', async () => {
    const dataDir = join(await fx.tempDir(), 'data');
    const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D), '--memory-limit', '200MiB'], fx.env(dataDir));
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('the memory budget is 200 MiB (--memory-limit)');
    expect(r.stderr).toContain(`set --memory-limit (or SESSION_ETL_MEMORY_LIMIT, or memoryLimit in the configuration) to at least ${MIN_BUDGET / MiB}MiB`);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('memoryLimit in a file that is not a size: exit 2 naming the key and the file', async () => {
    const dir = await fx.tempDir();
    const file = join(dir, 'c.json');
    await writeFile(file, JSON.stringify({ memoryLimit: 'lots' }));
    const r = await runCli(['backfill', '--config', file, '--from', isoDay(FROM), '--to', isoDay(FROM + D)], fx.env(join(dir, 'data')));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/memoryLimit.*c\.json.*expected a size such as "384MiB"/s);
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });

  it('--memory-limit 10 (no unit) and 999…TB are refused (exit 2), asking for a unit, before anything is written', async () => {
    const dir = await fx.tempDir();
    const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--memory-limit', '10'], fx.env(join(dir, 'data')));
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('--memory-limit (from command line): "10" has no unit: a size needs one, such as "10MiB" or "10GB"');
    const huge = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D)], { ...fx.env(join(dir, 'data')), SESSION_ETL_MEMORY_LIMIT: `${'9'.repeat(30)}TB` });
    expect(huge.code, huge.stderr).toBe(2);
    expect(huge.stderr).toContain(`SESSION_ETL_MEMORY_LIMIT (from environment): "${'9'.repeat(30)}TB" is more than 1TiB, the largest size taken`);
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });

  it('a budget that fits: the run completes and its debug log says the budget and its split', async () => {
    const dataDir = join(await fx.tempDir(), 'data');
    const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D), '--memory-limit', '400MiB', '--log-level', 'debug', '--json'], fx.env(dataDir));
    expect(r.code, r.stderr).toBe(0);
    if (container >= 400 * MiB) expect(r.stderr).toMatch(/memory budget: 400 MiB from --memory-limit; DuckDB 163 MiB, answers in flight \d+ MiB/);
    expect(JSON.parse(r.stdout).sessions.written).toBe(fx.emu.dataset.sessionsStartedIn(FROM, FROM + 2 * D + 1).length);
  });

  it('Parquet days are rewritten one at a time in 320 MiB, two side by side in 512 MiB; config says which', async () => {
    const rewrites = async (budget: string) => {
      const dataDir = join(await fx.tempDir(), 'data');
      const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 4 * D), '--memory-limit', budget, '--log-level', 'debug'], fx.env(dataDir));
      expect(r.code, r.stderr).toBe(0);
      return [...r.stderr.matchAll(/(\d+) Parquet days rewritten, (\d+) at a time at most \(the memory budget allows (\d+)\)/g)].map((m) => ({ days: Number(m[1]), most: Number(m[2]), allowed: Number(m[3]) }));
    };
    const small = await rewrites('320MiB');
    expect(small.length).toBeGreaterThan(0);
    for (const x of small) expect(x).toMatchObject({ most: 1, allowed: 1 });
    const c = await runCli(['config'], { SESSION_ETL_MEMORY_LIMIT: '320MiB' });
    if (container >= 320 * MiB) expect(c.stdout).toMatch(/^memory budget: 320 MiB .*Parquet rewrites one at a time/m);
    if (container >= 512 * MiB) {
      const big = await rewrites('512MiB');
      expect(big.some((x) => x.most === 2 && x.allowed === 2 && x.days >= 2)).toBe(true);
      expect((await runCli(['config'], { SESSION_ETL_MEMORY_LIMIT: '512MiB' })).stdout).toMatch(/^memory budget: 512 MiB .*Parquet rewrites 2 at a time/m);
    }
  });
});
