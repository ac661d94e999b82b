/**
 * The run's one memory budget: the smaller of the container's limit (readCgroupLimit) and the setting
 * (`--memory-limit`, SESSION_ETL_MEMORY_LIMIT, config `memoryLimit`), else DEFAULT_BUDGET. Everything that grows
 * with the data is sized from it (splitBudget); below MIN_CONTAINER or MIN_BUDGET a run refuses to start (exit 2)
 * rather than be killed by the kernel in the middle.
 */
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { ExitCode } from '../errors.js';

export const MiB = 2 ** 20;

/** The budget when nothing limits the process: the goal of ≤ 300 MB peak RSS (docs/benchmarks.md "Memory budget"). */
export const DEFAULT_BUDGET = 300 * 1000 * 1000;

/** Node, DuckDB's library and an open empty data directory (107 MiB measured, issue 19), and the allocator's slack. */
export const FIXED_BYTES = 128 * MiB;

/**
 * The smallest pool DuckDB's merges work in, measured on the long-text backfill (a merge takes a 122,880-row group,
 * ~180 MB of text): 64MB failed ("Out of Memory") at 100 k sessions; 96MiB at 1 M; 128MB completed at 1 M.
 */
export const MIN_DUCKDB_BYTES = 128 * MiB;

/** The smallest share per body in flight (a window with a larger body is split in two). */
export const MIN_BODY_BYTES = 4 * MiB;

export const MIN_BUDGET = FIXED_BYTES + MIN_DUCKDB_BYTES + 4 * MIN_BODY_BYTES;

/**
 * The smallest container a run starts in: the kernel kills there, and DuckDB's memory outside its pool is bounded
 * by no setting. Measured with the 1 M long-text backfill (docs/benchmarks.md "The container floor"): OOM-killed in
 * 272 MiB, in 320 MiB 2 runs of 14, never in 352 MiB (4 of 4) or 384 MiB (19 of 19).
 */
export const MIN_CONTAINER = 384 * MiB;

/**
 * glibc's allocator settings every launcher we ship sets, so freed memory goes back to the kernel; glibc reads them
 * at start, so the process cannot set them itself (docs/configuration.md "glibc's allocator").
 */
export const GLIBC_SETTINGS: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
};

/** The GLIBC_SETTINGS missing from `env` (for the run's debug log). */
export function glibcSettingsMissing(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(GLIBC_SETTINGS).filter(([k]) => env[k] === undefined).map(([k, v]) => `${k}=${v}`);
}

/** Exit 2, before anything is written. */
export class MemoryBudgetError extends Error {
  override readonly name = 'MemoryBudgetError';
  readonly exitCode = ExitCode.usage;
}

/** Unit → bytes: K(B)… decimal, Ki(B)… binary. */
const UNITS: Record<string, number> = { b: 1 };
['k', 'm', 'g', 't'].forEach((p, i) => {
  UNITS[p] = UNITS[`${p}b`] = 1000 ** (i + 1);
  UNITS[`${p}i`] = UNITS[`${p}ib`] = 1024 ** (i + 1);
});

/** A memory budget beyond any machine this runs on is a typo. */
export const MAX_SIZE = 2 ** 40;

export const SIZE_FORMS = 'a size such as "384MiB", "512MB" or "1GiB" (units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; Kubernetes\' M and Mi too)';

/**
 * The one parser of sizes: a number and its unit (SIZE_FORMS), up to MAX_SIZE. A number without a unit is refused
 * (as durations are: `10` is not 10 bytes); a JSON number in the configuration file is bytes.
 */
export function readSize(value: string | number): { bytes: number } | { problem: string } {
  let bytes: number;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 1) return { problem: `expected a positive number of bytes, or ${SIZE_FORMS}, got ${value}` };
    bytes = Math.floor(value);
  } else {
    const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
    const shown = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
    if (m && m[2] === '') return { problem: `${shown} has no unit: a size needs one, such as "${m[1]}MiB" or "${m[1]}GB" (a number alone is not taken as bytes: write "${m[1]}B" for that)` };
    const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
    if (!m || unit === undefined) return { problem: `expected ${SIZE_FORMS}, got ${shown}` };
    bytes = Math.floor(Number(m[1]) * unit);
    if (!(bytes >= 1)) return { problem: `expected a positive size, ${SIZE_FORMS}, got ${shown}` };
    if (bytes > MAX_SIZE) return { problem: `${shown} is more than 1TiB, the largest size taken` };
  }
  if (bytes > MAX_SIZE) return { problem: `${value} bytes is more than 1TiB, the largest size taken` };
  return { bytes };
}

/** readSize's bytes; throws MemoryBudgetError naming `what` when it is not a size. */
export function parseSize(value: string | number, what: string): number {
  const r = readSize(value);
  if ('problem' in r) throw new MemoryBudgetError(`${what}: ${r.problem}`);
  return r.bytes;
}

/** MiB, or GiB from 10 GiB. */
export function formatSize(bytes: number): string {
  if (bytes >= 10 * 2 ** 30) return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  return `${Math.round(bytes / MiB)} MiB`;
}

/** A memory cgroup's limit and the file it was read from (as seen from the fs root given). */
export interface CgroupLimit {
  bytes: number;
  version: 1 | 2;
  file: string;
}

/** cgroup v1 writes "no limit" as the largest multiple of the page size below 2^63. */
const NO_LIMIT_ABOVE = 2 ** 60;

/**
 * The memory limit of the process's cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), the lowest from its own
 * cgroup up to the mount's root (a parent's limit binds its children); undefined when none. `root`: tests' fs root.
 */
export function readCgroupLimit(root = '/'): CgroupLimit | undefined {
  const read = (p: string) => {
    try {
      return readFileSync(join(root, p), 'utf8');
    } catch {
      return undefined;
    }
  };
  const cgroups = read('/proc/self/cgroup');
  const mountinfo = read('/proc/self/mountinfo');
  if (!cgroups || !mountinfo) return undefined;
  let best: CgroupLimit | undefined;
  for (const mount of memoryMounts(mountinfo)) {
    const own = ownCgroup(cgroups, mount.version);
    if (own === undefined) continue;
    // Relative to the mount's root (a container sees its own cgroup as the root).
    const rel = mount.root === '/' ? own : own === mount.root || own.startsWith(`${mount.root}/`) ? own.slice(mount.root.length) || '/' : undefined;
    if (rel === undefined) continue;
    const file = mount.version === 2 ? 'memory.max' : 'memory.limit_in_bytes';
    for (let dir = posix.normalize(rel); ; dir = posix.dirname(dir)) {
      const path = posix.join(mount.point, dir, file);
      const bytes = parseLimit(read(path));
      if (bytes !== undefined && (!best || bytes < best.bytes)) best = { bytes, version: mount.version, file: path };
      if (dir === '/' || dir === '.') break;
    }
  }
  return best;
}

/** Bytes, or undefined for "max", no limit, or no file. */
export function parseLimit(text: string | undefined): number | undefined {
  const t = text?.trim();
  if (!t || t === 'max' || !/^\d+$/.test(t)) return undefined;
  const n = Number(t);
  return n > 0 && n < NO_LIMIT_ABOVE ? n : undefined;
}

/** v2 (cgroup2) mounts, and v1 with the memory controller. */
function memoryMounts(mountinfo: string): Array<{ point: string; root: string; version: 1 | 2 }> {
  const out: Array<{ point: string; root: string; version: 1 | 2 }> = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const f = left.split(' ');
    const [fstype, , superOpts] = right.split(' ');
    const unescape = (s: string) => s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    const point = unescape(f[4] ?? '');
    const root = unescape(f[3] ?? '/');
    if (fstype === 'cgroup2') out.push({ point, root, version: 2 });
    else if (fstype === 'cgroup' && (superOpts ?? '').split(',').includes('memory')) out.push({ point, root, version: 1 });
  }
  // v1's memory controller first: where both are mounted (hybrid), v1 holds the memory limits.
  return out.sort((a, b) => a.version - b.version);
}

/** For the v1 memory controller, or v2's unified one ("0::"). */
function ownCgroup(cgroups: string, version: 1 | 2): string | undefined {
  for (const line of cgroups.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (version === 2 && m[1] === '0' && m[2] === '') return m[3];
    if (version === 1 && m[2]!.split(',').includes('memory')) return m[3];
  }
  return undefined;
}

export interface MemoryBudget {
  bytes: number;
  source: 'cgroup' | 'setting' | 'default';
  /** In words: "cgroup v1 limit (/sys/fs/cgroup/memory/…/memory.limit_in_bytes)", "--memory-limit", … */
  from: string;
  /** The other limit, when both were there and this one was smaller. */
  alsoSeen?: string;
  /** The container's limit whenever there is one (the budget may be a smaller setting). */
  container?: { bytes: number; from: string };
}

/** The smaller of the container's limit and the setting (`name`: "--memory-limit", "memoryLimit in FILE", …). */
export function chooseBudget(cgroup: CgroupLimit | undefined, setting: { bytes: number; name: string } | undefined): MemoryBudget {
  const cg = cgroup ? { bytes: cgroup.bytes, source: 'cgroup' as const, from: `cgroup v${cgroup.version} limit (${cgroup.file})` } : undefined;
  const set = setting ? { bytes: setting.bytes, source: 'setting' as const, from: setting.name } : undefined;
  if (!cg) return set ?? { bytes: DEFAULT_BUDGET, source: 'default', from: 'default (no container limit or setting)' };
  const container = { bytes: cg.bytes, from: cg.from };
  if (!set) return { ...cg, container };
  const [win, other] = set.bytes <= cg.bytes ? [set, cg] : [cg, set];
  return { ...win, alsoSeen: `${other.from}: ${formatSize(other.bytes)}`, container };
}

/** How a budget is spent. */
export interface MemorySplit {
  budget: number;
  /** Not given to anything: Node, DuckDB's code, V8's heap. */
  fixed: number;
  duckdbBytes: number;
  /** DuckDB's memory_limit as DuckDB takes it ("123MiB", or the override as given). */
  duckdbMemoryLimit: string;
  duckdbFrom: 'budget' | 'SESSION_ETL_DUCKDB_MEMORY_LIMIT';
  /** concurrency × maxBodyBytes at most. */
  bodiesBytes: number;
  /** The largest body accepted (a larger one splits its window). */
  maxBodyBytes: number;
  /** Windows fetched and waiting for their commit, at most. */
  commitSlots: number;
  /** The bytes of the answers held at once, waiting and being read (pipeline/answer-bytes.ts). */
  answerBytes: number;
  /**
   * Parquet rewrites side by side: 2 when what the budget leaves outside DuckDB's pool holds two row groups (each
   * COPY builds one there), 1 below (budgets below 342 MiB at the default split).
   */
  parquetRewrites: 1 | 2;
  /** A row group's bytes: what DuckDB compresses at once outside its pool, and what a Parquet COPY builds (store/row-groups.ts). */
  rowGroupBytes: number;
}

/** Shares of what the budget leaves beyond FIXED_BYTES. The rest (a fifth) is DuckDB's memory outside its pool. */
const DUCKDB_SHARE = 0.6;
const BODIES_SHARE = 0.2;
/**
 * Half of the fifth outside DuckDB's pool: compressing a row group costs about its own bytes again outside the pool
 * (docs/benchmarks.md "Memory budget").
 */
const ROW_GROUP_SHARE = 0.1;

/** A writer's row group bytes outside a run: the default budget's. */
export const DEFAULT_ROW_GROUP_BYTES = Math.floor((DEFAULT_BUDGET - FIXED_BYTES) * ROW_GROUP_SHARE);
/** DuckDB's pool beyond this buys nothing a run needs (the previous default; docs/benchmarks.md). */
const MAX_DUCKDB_BYTES = 1024 * MiB;

/**
 * Splits a budget; refuses a container below MIN_CONTAINER and a budget below MIN_BUDGET. `duckdbOverride`
 * (SESSION_ETL_DUCKDB_MEMORY_LIMIT) replaces DuckDB's share; `maxBodyBytes` caps the per-body size.
 */
export function splitBudget(
  budget: MemoryBudget,
  opts: { concurrency: number; maxBodyBytes: number; duckdbOverride?: string | undefined },
): MemorySplit {
  const { container } = budget;
  if (container && container.bytes < MIN_CONTAINER) {
    throw new MemoryBudgetError(
      `the container's memory limit is ${formatSize(container.bytes)} (${container.from}), below the ${formatSize(MIN_CONTAINER)} a run needs ` +
        `not to be killed by the kernel (DuckDB's memory outside its pool needs room beside the budget's shares; docs/configuration.md "Memory and threads"): ` +
        `give the container at least ${formatSize(MIN_CONTAINER)} of memory (a Kubernetes limit of ${Math.ceil(MIN_CONTAINER / MiB)}Mi or more); nothing was written`,
    );
  }
  if (budget.bytes < MIN_BUDGET) {
    throw new MemoryBudgetError(
      `the memory budget is ${formatSize(budget.bytes)} (${budget.from}), below the ${formatSize(MIN_BUDGET)} a run needs at least ` +
        `(${formatSize(FIXED_BYTES)} for Node and DuckDB, ${formatSize(MIN_DUCKDB_BYTES)} for DuckDB's merges, ${formatSize(4 * MIN_BODY_BYTES)} for answers in flight): ` +
        `set --memory-limit (or SESSION_ETL_MEMORY_LIMIT, or memoryLimit in the configuration) to at least ${Math.ceil(MIN_BUDGET / MiB)}MiB; nothing was written`,
    );
  }
  const spare = budget.bytes - FIXED_BYTES;
  const concurrency = Math.max(1, opts.concurrency);
  const duckdbBytes = Math.max(MIN_DUCKDB_BYTES, Math.min(MAX_DUCKDB_BYTES, Math.floor(spare * DUCKDB_SHARE)));
  // The bodies' share, less what DuckDB's minimum took beyond its own share near the minimum budget.
  const bodies = Math.min(spare * BODIES_SHARE, spare - duckdbBytes);
  // The configuration's maxBodyBytes stays the cap, even below the budget's floor of MIN_BODY_BYTES per body.
  const bodyEach = Math.min(opts.maxBodyBytes, Math.max(MIN_BODY_BYTES, Math.floor(bodies / concurrency)));
  const override = opts.duckdbOverride?.trim();
  const duckdb = override ? parseSize(override, 'SESSION_ETL_DUCKDB_MEMORY_LIMIT') : duckdbBytes;
  const rowGroupBytes = Math.floor(spare * ROW_GROUP_SHARE);
  // At the default split the part outside the pool is two row groups exactly: a KiB of slack for the rounding.
  const outsidePool = spare - duckdb - bodies;
  return {
    budget: budget.bytes,
    fixed: FIXED_BYTES,
    duckdbBytes: duckdb,
    duckdbMemoryLimit: override || `${Math.floor(duckdbBytes / MiB)}MiB`,
    duckdbFrom: override ? 'SESSION_ETL_DUCKDB_MEMORY_LIMIT' : 'budget',
    bodiesBytes: bodyEach * concurrency,
    maxBodyBytes: bodyEach,
    // A waiting window's body is written to a file as soon as its commit takes it: twice the bodies' share.
    commitSlots: Math.max(2, Math.min(2 * concurrency, Math.floor((2 * bodies) / bodyEach))),
    // In flight and waiting together: within the bodies' share (the waiting ones were 50–60 MiB
    // beyond it at 1 M long text in 320 MiB, docs/benchmarks.md "The remaining cause at 320 MiB").
    answerBytes: Math.max(bodyEach, Math.floor(bodies)),
    rowGroupBytes,
    parquetRewrites: outsidePool + 1024 >= 2 * rowGroupBytes ? 2 : 1,
  };
}

/** chooseBudget and splitBudget for a run; MemoryBudgetError (exit 2) for a setting that is not a size, too. */
export function resolveMemory(opts: {
  setting?: { value: string | number; name: string } | undefined;
  concurrency: number;
  maxBodyBytes: number;
  duckdbOverride?: string | undefined;
  root?: string;
}): { budget: MemoryBudget; split: MemorySplit } {
  const setting = opts.setting ? { bytes: parseSize(opts.setting.value, opts.setting.name), name: opts.setting.name } : undefined;
  const budget = chooseBudget(readCgroupLimit(opts.root), setting);
  return { budget, split: splitBudget(budget, { concurrency: opts.concurrency, maxBodyBytes: opts.maxBodyBytes, duckdbOverride: opts.duckdbOverride }) };
}

/** One line for `config` and the run's log. */
export function describeSplit(budget: MemoryBudget, split: MemorySplit): string {
  return (
    `${formatSize(budget.bytes)} from ${budget.from}${budget.alsoSeen ? ` (also: ${budget.alsoSeen})` : ''}; ` +
    `DuckDB ${split.duckdbFrom === 'budget' ? formatSize(split.duckdbBytes) : `${split.duckdbMemoryLimit} (SESSION_ETL_DUCKDB_MEMORY_LIMIT)`}, ` +
    `answers in flight ${formatSize(split.bodiesBytes)} (${formatSize(split.maxBodyBytes)} each at most), ` +
    `row groups of ${formatSize(split.rowGroupBytes)} at most, ` +
    `Parquet rewrites ${split.parquetRewrites === 1 ? 'one at a time' : `${split.parquetRewrites} at a time`}, ` +
    `${split.commitSlots} windows waiting for their commit, answers held ${formatSize(split.answerBytes)} at most, ${formatSize(split.fixed)} for Node and DuckDB's code`
  );
}
