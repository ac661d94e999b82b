/**
 * What every reliability scenario shares: the result shape the table is built from, a seeded
 * random source, temporary directories, the CLI as a child process, and ground truth from the
 * emulator in the comparable shape of test/helpers/read-store.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Emulator } from '../../src/emulator/index.js';
import { expectedRow, type ExpectedRow } from '../helpers/read-store.js';
import { D as DAY, isoDay } from '../helpers/time.js';

/** One line of the table: what was tried, how often, and what was found. */
export interface ScenarioResult {
  area: string;
  scenario: string;
  trials: number;
  /** Faults, kills, bad records or bad inputs injected. */
  injected: number;
  /** Rows compared value by value with the emulator's data. */
  rowsCompared: number;
  /** Individual checks made (each one an assertion on files, exit codes, messages or rows). */
  checks: number;
  failures: string[];
  notes: string[];
  durationMs: number;
}

export function newResult(area: string, scenario: string): ScenarioResult {
  return { area, scenario, trials: 0, injected: 0, rowsCompared: 0, checks: 0, failures: [], notes: [], durationMs: 0 };
}

/** Records one check; a failing one keeps its message (the first few per scenario are printed). */
export function check(r: ScenarioResult, ok: boolean, message: string): boolean {
  r.checks++;
  if (!ok) r.failures.push(message);
  return ok;
}

export async function timed(r: ScenarioResult, fn: () => Promise<void>): Promise<ScenarioResult> {
  const t0 = Date.now();
  try {
    await fn();
  } catch (err) {
    r.failures.push(`scenario aborted: ${(err as Error)?.stack ?? String(err)}`);
  } finally {
    r.durationMs += Date.now() - t0;
  }
  return r;
}

/** mulberry32: a small seeded PRNG, so a failing trial can be replayed with RELIABILITY_SEED. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
}

export { DAY, isoDay };

/** Midnight UTC of the day `daysAgo` days before today. */
export function dayStart(daysAgo: number, nowS = Math.floor(Date.now() / 1000)): number {
  return Math.floor(nowS / DAY) * DAY - daysAgo * DAY;
}

export const isoTime = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');

export { BIN, REPO_ROOT } from '../helpers/cli.js';

/** Temporary directories, removed by cleanup(). A base directory can be given (e.g. a tmpfs). */
export class TempDirs {
  private readonly dirs: string[] = [];
  constructor(private readonly base = tmpdir()) {}
  async make(prefix = 'rel-'): Promise<string> {
    const d = await mkdtemp(join(this.base, `session-etl-${prefix}`));
    this.dirs.push(d);
    return d;
  }
  async cleanup(): Promise<void> {
    for (const d of this.dirs.splice(0)) await rm(d, { recursive: true, force: true }).catch(() => {});
  }
}

export { startCli, runCli } from '../helpers/cli.js';
export type { CliResult as CliRun } from '../helpers/cli.js';
export type CliProcess = ReturnType<typeof import('../helpers/cli.js').startCli>;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The environment a run against `emu` needs. */
export function cliEnv(emu: { url: string; apiKey: string }, dataDir: string, extra: Record<string, string> = {}) {
  return { REPORTING_URL: emu.url, REPORTING_API_KEY: emu.apiKey, SESSION_ETL_DATA_DIR: dataDir, ...extra };
}

export type ComparableRow = ExpectedRow;

/**
 * What a backfill of [from, to) must store, by id. The emulator's default window rule is 'closed'
 * (a window [s, e] includes sessions started at e), so a session started exactly at `to` is
 * fetched too: `closedEnd` includes it.
 */
export function truthBetween(emu: Emulator, from: number, to: number, closedEnd = true): Map<string, ComparableRow> {
  const m = new Map<string, ComparableRow>();
  for (const r of emu.dataset.sessionsStartedIn(from, closedEnd ? to + 1 : to)) m.set(r.id, expectedRow(r));
  return m;
}

/** Rows without their lineage column, keyed by id; duplicates are reported. */
export function byId(rows: Array<Record<string, unknown>>): { map: Map<string, Record<string, unknown>>; duplicates: string[] } {
  const map = new Map<string, Record<string, unknown>>();
  const duplicates: string[] = [];
  for (const r of rows) {
    const { extracted_at: _x, ...rest } = r;
    const id = String(r.session_id);
    if (map.has(id)) duplicates.push(id);
    map.set(id, rest);
  }
  return { map, duplicates };
}

/** Field-by-field difference of one row from its expected value ('' when equal). */
export function rowDiff(expected: Record<string, unknown>, actual: Record<string, unknown>): string {
  const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
  for (const k of keys) {
    const a = actual[k] ?? null;
    const e = expected[k] ?? null;
    if (a !== e) return `${k}: stored ${JSON.stringify(a)}, expected ${JSON.stringify(e)}`;
  }
  return '';
}

/**
 * Exact comparison of stored rows with the truth: same ids, no duplicate, every value equal.
 * Returns the problems (at most a few of each kind) and how many rows were compared.
 */
export function compareExact(
  what: string,
  truth: Map<string, ComparableRow>,
  stored: Array<Record<string, unknown>>,
): { problems: string[]; compared: number } {
  const { map, duplicates } = byId(stored);
  const problems: string[] = [];
  if (duplicates.length) problems.push(`${what}: ${duplicates.length} duplicate ids (e.g. ${duplicates[0]})`);
  const missing: string[] = [];
  const different: string[] = [];
  for (const [id, exp] of truth) {
    const got = map.get(id);
    if (!got) {
      missing.push(id);
      continue;
    }
    const d = rowDiff(exp as unknown as Record<string, unknown>, got);
    if (d) different.push(`${id} (${d})`);
  }
  const extra = [...map.keys()].filter((id) => !truth.has(id));
  if (missing.length) problems.push(`${what}: ${missing.length} of ${truth.size} sessions missing (e.g. ${missing[0]})`);
  if (extra.length) problems.push(`${what}: ${extra.length} sessions that should not be there (e.g. ${extra[0]})`);
  if (different.length) problems.push(`${what}: ${different.length} sessions with a different value (e.g. ${different[0]})`);
  return { problems, compared: truth.size };
}

/** The first lines of a process's output, for a failure message. */
export function excerpt(r: { code: number | null; signal?: NodeJS.Signals | null; stderr: string; stdout?: string }): string {
  const err = r.stderr.trim().split('\n').filter((l) => !l.startsWith('{"level":30')).slice(-3).join(' | ');
  return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}: ${err.slice(0, 400)}`;
}
