import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  chooseBudget,
  DEFAULT_BUDGET,
  MemoryBudgetError,
  MIN_BUDGET,
  MIN_CONTAINER,
  MiB,
  parseSize,
  readCgroupLimit,
  resolveMemory,
  splitBudget,
} from '../../src/config/memory-budget.js';
import { exitCodeOf } from '../../src/errors.js';

const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

/** A filesystem root holding the given files. */
function fsRoot(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'session-etl-cgroup-'));
  roots.push(root);
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), text);
  }
  return root;
}

// This machine's kind of /proc/self/mountinfo: cgroup v1 controllers under /sys/fs/cgroup, and a cgroup2 mount beside them.
const V1_MOUNTINFO = [
  '30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');
const V1_CGROUP = ['9:name=systemd:/', '4:memory:/jobs/run-1', '1:cpu:/', '0::/'].join('\n');
const V1_NO_LIMIT = '9223372036854771712\n';

const V2_MOUNTINFO = '25 20 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate';

describe('parseSize', () => {
  it('reads bytes, decimal and binary units, and Kubernetes quantities', () => {
    expect(parseSize('1048576B', 'x')).toBe(MiB);
    expect(parseSize(4096, 'x')).toBe(4096);
    expect(parseSize('1TiB', 'x')).toBe(2 ** 40);
    expect(parseSize('1TB', 'x')).toBe(1e12);
    expect(parseSize('384MiB', 'x')).toBe(384 * MiB);
    expect(parseSize('384Mi', 'x')).toBe(384 * MiB);
    expect(parseSize('512MB', 'x')).toBe(512e6);
    expect(parseSize('512M', 'x')).toBe(512e6);
    expect(parseSize('1.5GiB', 'x')).toBe(1.5 * 2 ** 30);
    expect(parseSize(' 2 gb ', 'x')).toBe(2e9);
  });

  it('one rule for every size (issue 38): a unit is required, as durations require one; at most 1 TiB', () => {
    const refusal = (v: string | number) => {
      try {
        parseSize(v, '--memory-limit');
      } catch (err) {
        expect(exitCodeOf(err)).toBe(2);
        return (err as Error).message;
      }
      throw new Error(`${v} was accepted`);
    };
    // A number without a unit was read as bytes ("budget is 0 MiB"): now refused, asking for a unit.
    expect(refusal('10')).toBe('--memory-limit: "10" has no unit: a size needs one, such as "10MiB" or "10GB" (a number alone is not taken as bytes: write "10B" for that)');
    expect(refusal('1e15')).toMatch(/^--memory-limit: expected a size such as "384MiB".*, got "1e15"$/);
    // 999…TB was taken (1e33 bytes) while 1e15 was refused: beyond 1 TiB nothing is.
    for (const huge of [`${'9'.repeat(30)}TB`, '2TiB', '1.1TiB', 2 ** 41, Number.MAX_VALUE]) {
      expect(refusal(huge), String(huge)).toMatch(/is more than 1TiB, the largest size taken$/);
    }
  });

  it('refuses what is not a size, naming the setting (exit 2)', () => {
    for (const bad of ['lots', '', '12 parsecs', '-5MiB', '0', 0, -1, Number.NaN]) {
      let err: unknown;
      try {
        parseSize(bad as string, '--memory-limit');
      } catch (e) {
        err = e;
      }
      expect(err, String(bad)).toBeInstanceOf(MemoryBudgetError);
      expect((err as Error).message).toContain('--memory-limit');
      expect(exitCodeOf(err)).toBe(2);
    }
  });
});

describe('readCgroupLimit', () => {
  it('v1: the limit of the process\'s own memory cgroup', () => {
    const root = fsRoot({
      '/proc/self/mountinfo': V1_MOUNTINFO,
      '/proc/self/cgroup': V1_CGROUP,
      '/sys/fs/cgroup/memory/memory.limit_in_bytes': V1_NO_LIMIT,
      '/sys/fs/cgroup/memory/jobs/memory.limit_in_bytes': V1_NO_LIMIT,
      '/sys/fs/cgroup/memory/jobs/run-1/memory.limit_in_bytes': String(384 * MiB),
    });
    expect(readCgroupLimit(root)).toEqual({ bytes: 384 * MiB, version: 1, file: '/sys/fs/cgroup/memory/jobs/run-1/memory.limit_in_bytes' });
  });

  it('v1: a parent\'s lower limit binds; v1\'s "no limit" value is no limit', () => {
    const root = fsRoot({
      '/proc/self/mountinfo': V1_MOUNTINFO,
      '/proc/self/cgroup': V1_CGROUP,
      '/sys/fs/cgroup/memory/memory.limit_in_bytes': V1_NO_LIMIT,
      '/sys/fs/cgroup/memory/jobs/memory.limit_in_bytes': String(256 * MiB),
      '/sys/fs/cgroup/memory/jobs/run-1/memory.limit_in_bytes': V1_NO_LIMIT,
    });
    expect(readCgroupLimit(root)?.bytes).toBe(256 * MiB);
    const none = fsRoot({
      '/proc/self/mountinfo': V1_MOUNTINFO,
      '/proc/self/cgroup': V1_CGROUP,
      '/sys/fs/cgroup/memory/memory.limit_in_bytes': V1_NO_LIMIT,
      '/sys/fs/cgroup/memory/jobs/run-1/memory.limit_in_bytes': V1_NO_LIMIT,
    });
    expect(readCgroupLimit(none)).toBeUndefined();
  });

  it('v2: memory.max of the unified cgroup ("max" is no limit), and a container that sees its cgroup as the root', () => {
    const root = fsRoot({
      '/proc/self/mountinfo': V2_MOUNTINFO,
      '/proc/self/cgroup': '0::/kubepods/pod-a/c1\n',
      '/sys/fs/cgroup/memory.max': 'max\n',
      '/sys/fs/cgroup/kubepods/memory.max': 'max\n',
      '/sys/fs/cgroup/kubepods/pod-a/memory.max': `${512 * MiB}\n`,
      '/sys/fs/cgroup/kubepods/pod-a/c1/memory.max': 'max\n',
    });
    expect(readCgroupLimit(root)).toEqual({ bytes: 512 * MiB, version: 2, file: '/sys/fs/cgroup/kubepods/pod-a/memory.max' });
    // A cgroup namespace: /proc/self/cgroup says "/", the mount is the container's own cgroup.
    const container = fsRoot({ '/proc/self/mountinfo': V2_MOUNTINFO, '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/memory.max': `${300 * MiB}\n` });
    expect(readCgroupLimit(container)?.bytes).toBe(300 * MiB);
  });

  it('no cgroup files (not Linux, or /proc not mounted): no limit', () => {
    expect(readCgroupLimit(fsRoot({}))).toBeUndefined();
  });
});

describe('the budget', () => {
  const cg = { bytes: 384 * MiB, version: 1 as const, file: '/sys/fs/cgroup/memory/x/memory.limit_in_bytes' };

  it('the smaller of the container and the setting wins; neither: the default', () => {
    expect(chooseBudget(cg, { bytes: 512 * MiB, name: '--memory-limit' })).toMatchObject({ bytes: 384 * MiB, source: 'cgroup' });
    expect(chooseBudget(cg, { bytes: 320 * MiB, name: '--memory-limit' })).toMatchObject({ bytes: 320 * MiB, source: 'setting', from: '--memory-limit' });
    expect(chooseBudget(undefined, { bytes: 320 * MiB, name: 'SESSION_ETL_MEMORY_LIMIT' })).toMatchObject({ bytes: 320 * MiB, from: 'SESSION_ETL_MEMORY_LIMIT' });
    expect(chooseBudget(undefined, undefined)).toMatchObject({ bytes: DEFAULT_BUDGET, source: 'default' });
  });

  it('is split: DuckDB, the bodies in flight (concurrency × the largest body) and the commit slots fit in it', () => {
    for (const mib of [272, 300, 384, 512, 2048]) {
      const s = splitBudget({ bytes: mib * MiB, source: 'setting', from: 'x' }, { concurrency: 4, maxBodyBytes: 256 * MiB });
      expect(s.fixed + s.duckdbBytes + s.bodiesBytes, `${mib} MiB`).toBeLessThanOrEqual(mib * MiB);
      expect(s.bodiesBytes).toBe(4 * s.maxBodyBytes);
      expect(s.duckdbMemoryLimit).toBe(`${Math.floor(s.duckdbBytes / MiB)}MiB`);
      expect(s.commitSlots).toBeGreaterThanOrEqual(2);
      // The answers held (in flight and waiting for their commit) within the bodies' share, at least one body.
      expect(s.answerBytes).toBeGreaterThanOrEqual(s.maxBodyBytes);
      expect(s.fixed + s.duckdbBytes + s.answerBytes, `${mib} MiB`).toBeLessThanOrEqual(mib * MiB);
    }
    const small = splitBudget({ bytes: 384 * MiB, source: 'cgroup', from: 'x' }, { concurrency: 4, maxBodyBytes: 256 * MiB });
    const big = splitBudget({ bytes: 2048 * MiB, source: 'cgroup', from: 'x' }, { concurrency: 4, maxBodyBytes: 256 * MiB });
    expect(big.duckdbBytes).toBeGreaterThan(small.duckdbBytes);
    expect(big.maxBodyBytes).toBeGreaterThan(small.maxBodyBytes);
    // The configuration's maxBodyBytes stays the cap when the budget allows more.
    expect(splitBudget({ bytes: 2048 * MiB, source: 'cgroup', from: 'x' }, { concurrency: 4, maxBodyBytes: 8 * MiB }).maxBodyBytes).toBe(8 * MiB);
    // Even below the budget's floor per body (4 MiB): a configuration asking for smaller bodies gets them.
    expect(splitBudget({ bytes: 300 * MiB, source: 'default', from: 'x' }, { concurrency: 4, maxBodyBytes: 8192 }).maxBodyBytes).toBe(8192);
  });

  it('Parquet rewrites side by side only when the part outside DuckDB\'s pool holds two row groups', () => {
    const at = (mib: number, duckdbOverride?: string) =>
      splitBudget({ bytes: mib * MiB, source: 'setting', from: 'x' }, { concurrency: 4, maxBodyBytes: 256 * MiB, duckdbOverride }).parquetRewrites;
    // DuckDB's pool at its 128 MiB floor (budgets below 342 MiB, the default 300 MB among them): one at a time.
    expect([272, 300e6 / MiB, 320, 341].map((m) => at(m))).toEqual([1, 1, 1, 1]);
    expect([342, 384, 512, 2048].map((m) => at(m))).toEqual([2, 2, 2, 2]);
    // A smaller pool set by hand leaves room outside it; a larger one takes it.
    expect(at(320, '80MiB')).toBe(2);
    expect(at(512, '400MiB')).toBe(1);
  });

  it('SESSION_ETL_DUCKDB_MEMORY_LIMIT replaces DuckDB\'s share as given', () => {
    const s = splitBudget({ bytes: 384 * MiB, source: 'cgroup', from: 'x' }, { concurrency: 4, maxBodyBytes: 256 * MiB, duckdbOverride: '200MB' });
    expect(s).toMatchObject({ duckdbMemoryLimit: '200MB', duckdbBytes: 200e6, duckdbFrom: 'SESSION_ETL_DUCKDB_MEMORY_LIMIT' });
  });

  it('below the minimum: refused (exit 2), naming the minimum and how to give more', () => {
    const refuse = (budget: Parameters<typeof splitBudget>[0]) => {
      try {
        splitBudget(budget, { concurrency: 4, maxBodyBytes: 256 * MiB });
      } catch (e) {
        return e as Error;
      }
      return undefined;
    };
    expect(refuse({ bytes: MIN_BUDGET, source: 'setting', from: '--memory-limit' })).toBeUndefined();
    const fromCgroup = refuse(chooseBudget({ bytes: 96 * MiB, version: 1, file: '/sys/fs/cgroup/memory/x/memory.limit_in_bytes' }, undefined));
    expect(fromCgroup).toBeInstanceOf(MemoryBudgetError);
    expect(exitCodeOf(fromCgroup)).toBe(2);
    expect(fromCgroup!.message).toContain("the container's memory limit is 96 MiB (cgroup v1 limit");
    expect(fromCgroup!.message).toContain(`give the container at least ${MIN_CONTAINER / MiB} MiB`);
    const fromFlag = refuse({ bytes: MIN_BUDGET - 1, source: 'setting', from: '--memory-limit' });
    expect(fromFlag!.message).toContain(`set --memory-limit (or SESSION_ETL_MEMORY_LIMIT, or memoryLimit in the configuration) to at least ${MIN_BUDGET / MiB}MiB`);
  });

  it('a container below MIN_CONTAINER is refused even when the budget is above MIN_BUDGET, or is a smaller setting inside it', () => {
    const cgroup = (mib: number) => ({ bytes: mib * MiB, version: 1 as const, file: '/sys/fs/cgroup/memory/x/memory.limit_in_bytes' });
    const split = (budget: ReturnType<typeof chooseBudget>) => () => splitBudget(budget, { concurrency: 4, maxBodyBytes: 256 * MiB });
    expect(MIN_CONTAINER).toBeGreaterThan(MIN_BUDGET);
    expect(split(chooseBudget(cgroup(MIN_CONTAINER / MiB), undefined))).not.toThrow();
    expect(split(chooseBudget(cgroup(MIN_CONTAINER / MiB - 1), undefined))).toThrow(/the container's memory limit is \d+ MiB \(cgroup v1 limit/);
    // The setting is the smaller, and above MIN_BUDGET: the container still kills.
    const inside = chooseBudget(cgroup(300), { bytes: 280 * MiB, name: '--memory-limit' });
    expect(inside).toMatchObject({ bytes: 280 * MiB, source: 'setting', container: { bytes: 300 * MiB } });
    expect(split(inside)).toThrow(`give the container at least ${MIN_CONTAINER / MiB} MiB`);
    // No container: the same setting is only a size to cut the shares from.
    expect(split(chooseBudget(undefined, { bytes: 280 * MiB, name: '--memory-limit' }))).not.toThrow();
  });

  it('resolveMemory: the setting against the cgroup under a given root', () => {
    const root = fsRoot({
      '/proc/self/mountinfo': V1_MOUNTINFO,
      '/proc/self/cgroup': V1_CGROUP,
      '/sys/fs/cgroup/memory/jobs/run-1/memory.limit_in_bytes': String(400 * MiB),
    });
    expect(resolveMemory({ root, setting: { value: '1GiB', name: '--memory-limit' }, concurrency: 4, maxBodyBytes: 256 * MiB }).budget).toMatchObject({
      bytes: 400 * MiB,
      source: 'cgroup',
      alsoSeen: '--memory-limit: 1024 MiB',
    });
    expect(() => resolveMemory({ root, setting: { value: '64MiB', name: '--memory-limit' }, concurrency: 4, maxBodyBytes: 256 * MiB })).toThrow(/64 MiB \(--memory-limit\), below/);
  });
});
