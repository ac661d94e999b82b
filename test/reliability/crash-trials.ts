/**
 * Crash anywhere: backfills of a few thousand sessions killed with SIGKILL at random moments and at
 * the named crash points (src/util/crash-point.ts), then run again to completion.
 *
 * Every trial: after each kill the store is read back and the crash invariants checked (the
 * coverage never claims a session that is not committed; Parquet files are complete; a partition
 * not marked pending equals the committed rows); a watcher lists parquet/sessions/ every few ms
 * throughout; after the completing run the DuckDB table and the Parquet dataset must equal the
 * emulator's data exactly.
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import {
  check, cliEnv, dayStart, DAY, excerpt, isoDay, newResult, Rng, startCli, TempDirs, truthBetween,
  type ComparableRow, type ScenarioResult,
} from './harness.js';
import { checkCrashInvariants, checkFinal, readStore, type Format } from './inspect-store.js';
import { watchParquet } from './parquet-watcher.js';

export interface CrashOptions {
  trials: number;
  seed: number;
  days?: number;
  sessionsPerDay?: number;
  latencyMs?: number;
  chunk?: string;
  /** Trials run side by side (each its own data directory; one emulator). */
  parallel?: number;
  log?: (line: string) => void;
}

/** One way of dying: at a named crash point (its n-th passage), or SIGKILL after a delay. */
type Kill = { crashAt: string } | { delayMs: number };

interface TrialPlan {
  row: string;
  fresh: boolean;
  format: Format;
  kills: Kill[];
}

const POINT_ROWS: Record<string, string> = {
  random: 'kill -9 after a random delay',
  fetch: 'mid-fetch (request sent, answer unread)',
  'mid-transaction': 'mid-DuckDB-transaction (rows written, not committed)',
  'after-commit': 'between data and state: committed, Parquet not rewritten',
  'mid-parquet-rewrite': 'mid-Parquet-rewrite (new file in .tmp, not renamed)',
  'after-parquet-rename': 'between data and state: Parquet renamed, pending mark not cleared',
  double: 'killed again while recovering (two kills, then completion)',
  parquet: '--format parquet, random kill or mid-rewrite',
  duckdb: '--format duckdb, random kill or mid-transaction',
  merge: 'mid-merge and after-merge (committed rows moving from pending/ into the table)',
  constructed:
    'states a kill leaves in windows too narrow to hit by chance: an empty sessions.duckdb (killed while DuckDB created it), a half-written file in .tmp, a lock being prepared',
};

/**
 * The mix of trials: about a third random delays, the rest spread over the named points, fresh
 * data directories and refreshes of a completed one (where a rewrite replaces an existing file).
 */
function plan(n: number, rng: Rng, windows: number, partitions: number, fullMs: number): TrialPlan[] {
  const randomDelay = (): Kill => ({ delayMs: rng.int(50, Math.round(fullMs * 1.05)) });
  const at = (point: string, max: number): Kill => ({ crashAt: `${point}:${rng.int(1, Math.max(1, max))}` });
  const makers: Array<(i: number) => TrialPlan> = [
    (i) => ({ row: 'random', fresh: i % 2 === 0, format: 'both', kills: [randomDelay()] }),
    (i) => ({ row: 'fetch', fresh: i % 2 === 0, format: 'both', kills: [at('fetch', windows)] }),
    (i) => ({ row: 'random', fresh: i % 2 === 1, format: 'both', kills: [randomDelay()] }),
    (i) => ({ row: 'mid-transaction', fresh: i % 2 === 0, format: 'both', kills: [at('mid-transaction', 10)] }),
    (i) => ({ row: 'after-commit', fresh: i % 2 === 0, format: 'both', kills: [at('after-commit', 10)] }),
    (i) => ({ row: 'random', fresh: i % 2 === 0, format: 'both', kills: [randomDelay()] }),
    (i) => ({ row: 'mid-parquet-rewrite', fresh: i % 2 === 0, format: 'both', kills: [at('mid-parquet-rewrite', partitions)] }),
    (i) => ({ row: 'after-parquet-rename', fresh: i % 2 === 0, format: 'both', kills: [at('after-parquet-rename', partitions)] }),
    (i) => ({
      row: 'double',
      fresh: true,
      format: 'both',
      kills: i % 2 === 0 ? [at('after-commit', 6), { crashAt: 'mid-parquet-rewrite:1' }] : [randomDelay(), randomDelay()],
    }),
    (i) => ({ row: 'parquet', fresh: true, format: 'parquet', kills: [i % 2 === 0 ? randomDelay() : at('mid-parquet-rewrite', partitions)] }),
    (i) => ({ row: 'duckdb', fresh: true, format: 'duckdb', kills: [i % 2 === 0 ? randomDelay() : at('mid-transaction', 10)] }),
    (i) => ({ row: 'merge', fresh: i % 4 < 2, format: 'both', kills: [{ crashAt: `${i % 2 === 0 ? 'mid-merge' : 'after-merge'}:1` }] }),
  ];
  const out: TrialPlan[] = [];
  for (let i = 0; out.length < n; i++) out.push(makers[i % makers.length]!(Math.floor(i / makers.length)));
  return out;
}

export async function runCrashTrials(o: CrashOptions): Promise<ScenarioResult[]> {
  const log = o.log ?? (() => {});
  const rng = new Rng(o.seed);
  const days = o.days ?? 16;
  const chunk = o.chunk ?? '6h';
  const nowS = Math.floor(Date.now() / 1000);
  const from = dayStart(days + 3, nowS);
  const to = from + days * DAY;
  const emu = await startEmulator({
    seed: o.seed % 1000,
    from: from - DAY,
    to: nowS,
    now: nowS,
    sessionsPerDay: o.sessionsPerDay ?? 160,
    faults: { latencyMs: o.latencyMs ?? 30 },
  });
  const temp = new TempDirs();
  const rows = new Map<string, ScenarioResult>();
  const rowFor = (key: string) => {
    let r = rows.get(key);
    if (!r) rows.set(key, (r = newResult('1. crash anywhere', POINT_ROWS[key] ?? key)));
    return r;
  };
  const watch = { listings: 0, files: 0 };
  const phases = new Map<string, number>();
  const t0 = Date.now();
  try {
    const truth = truthBetween(emu, from, to);
    const args = ['backfill', '--from', isoDay(from), '--to', isoDay(to), '--chunk', chunk, '--json', '--no-progress'];
    const windows = (days * DAY) / 21_600;
    // A completed store: the starting point of the refresh trials, and the measure of a full run.
    const baseline = await temp.make('crash-baseline-');
    const full = await startCli(args, cliEnv(emu, baseline)).result;
    if (full.code !== 0) throw new Error(`the baseline backfill failed: ${excerpt(full)}`);
    const fullMs = full.durationMs;
    log(`crash trials: ${truth.size} sessions, ${windows} windows of ${chunk}, a full run takes ${fullMs} ms`);
    const trials = plan(o.trials, rng, windows, days, fullMs);

    let next = 0;
    const worker = async () => {
      while (next < trials.length) {
        const i = next++;
        const t = trials[i]!;
        const r = rowFor(t.row);
        const started = Date.now();
        try {
          await runTrial(t, { emu, temp, truth, args, baseline, r, watch, phases, windows });
        } catch (err) {
          r.failures.push(`trial ${i} (${JSON.stringify(t.kills)}): ${(err as Error).stack ?? err}`);
        }
        r.durationMs += Date.now() - started;
        log(`  trial ${i + 1}/${trials.length} ${t.row} ${t.fresh ? 'fresh' : 'refresh'} ${t.format} ${JSON.stringify(t.kills)}: ${r.failures.length ? 'failures so far: ' + r.failures.length : 'ok'} (${Date.now() - started} ms)`);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, o.parallel ?? 1) }, worker));
    await constructedStates({ emu, temp, truth, args, r: rowFor('constructed') });
  } finally {
    await emu.close();
    await temp.cleanup();
  }
  const out = [...rows.values()];
  const first = out[0];
  if (first) {
    first.notes.push(
      `a reader listed parquet/sessions/ ${watch.listings} times during the trials and opened ${watch.files} files: ` +
        'every name ended in .parquet, every file had PAR1 at both ends',
    );
    if (phases.size) first.notes.push(`where the random kills of fresh runs landed: ${[...phases].map(([k, v]) => `${k} ${v}`).join(', ')}`);
    first.notes.push(`all crash trials took ${Math.round((Date.now() - t0) / 1000)} s`);
  }
  return out;
}

interface TrialContext {
  emu: Emulator;
  temp: TempDirs;
  truth: Map<string, ComparableRow>;
  args: string[];
  baseline: string;
  r: ScenarioResult;
  watch: { listings: number; files: number };
  phases: Map<string, number>;
  windows: number;
}

async function runTrial(t: TrialPlan, c: TrialContext): Promise<void> {
  const { r, emu } = c;
  r.trials++;
  const dir = await c.temp.make('crash-');
  if (!t.fresh) await cp(c.baseline, dir, { recursive: true });
  const args = t.format === 'both' ? c.args : [...c.args, '--format', t.format];
  const watcher = watchParquet(dir);
  try {
    for (const k of t.kills) {
      const child = startCli(args, cliEnv(emu, dir, 'crashAt' in k ? { SESSION_ETL_CRASH_AT: k.crashAt } : {}));
      const timer = 'delayMs' in k ? setTimeout(() => child.kill('SIGKILL'), k.delayMs) : undefined;
      const res = await child.result;
      if (timer) clearTimeout(timer);
      if (res.signal === 'SIGKILL') r.injected++;
      else check(r, res.code === 0, `a run meant to be killed (${JSON.stringify(k)}) ended otherwise: ${excerpt(res)}`);
      const snap = await readStore(dir, t.format);
      const inv = checkCrashInvariants(snap, t.format, emu);
      r.rowsCompared += inv.compared;
      check(r, inv.problems.length === 0, `after kill ${JSON.stringify(k)}: ${inv.problems.slice(0, 3).join('; ')}`);
      if (t.row === 'random' && t.fresh && res.signal === 'SIGKILL') {
        const phase = phaseOf(snap, c.windows);
        c.phases.set(phase, (c.phases.get(phase) ?? 0) + 1);
      }
    }
    const done = await startCli(args, cliEnv(emu, dir)).result;
    check(r, done.code === 0, `the completing run failed: ${excerpt(done)}`);
    if (done.code === 0) {
      const summary = JSON.parse(done.stdout) as { outcome: string };
      check(r, summary.outcome === 'succeeded' || summary.outcome === 'nothing-to-do', `completing run outcome ${summary.outcome}`);
    }
  } finally {
    const w = await watcher.stop();
    c.watch.listings += w.listings;
    c.watch.files += w.filesChecked;
    check(r, w.violations.length === 0, `the Parquet reader saw: ${w.violations.slice(0, 3).join('; ')}`);
  }
  const fin = await checkFinal(dir, t.format, c.truth);
  r.rowsCompared += fin.compared;
  check(r, fin.problems.length === 0, `after the completing run (${JSON.stringify(t.kills)}): ${fin.problems.slice(0, 3).join('; ')}`);
  check(r, fin.snap.backfillsOpen === 0, 'the backfill is still marked open after the completing run');
}

function phaseOf(snap: Awaited<ReturnType<typeof readStore>>, windows: number): string {
  if (!snap.exists || snap.coverage.length === 0) return 'before the first commit';
  const covered = snap.coverage.reduce((n, w) => n + (w.end - w.start), 0) / 21_600;
  if (covered < windows) return 'while fetching and committing';
  if (snap.pending.length) return 'during the Parquet rewrite';
  return 'after the last rewrite';
}

/**
 * The states a kill leaves inside windows of a few microseconds, built by hand: each must be
 * recovered from by the next run, which then completes the data exactly.
 */
async function constructedStates(c: { emu: Emulator; temp: TempDirs; truth: Map<string, ComparableRow>; args: string[]; r: ScenarioResult }): Promise<void> {
  const { r } = c;
  const states: Array<{ name: string; make(dir: string): Promise<void> }> = [
    { name: 'an empty sessions.duckdb', make: (dir) => writeFile(join(dir, 'sessions.duckdb'), '') },
    {
      name: 'a half-written Parquet file in .tmp',
      make: async (dir) => {
        await mkdir(join(dir, '.tmp'), { recursive: true });
        await writeFile(join(dir, '.tmp', '2026-01-01-99999-1.parquet'), Buffer.from('PAR1 half a file'));
      },
    },
    {
      name: 'a lock being prepared by a writer that died (lock.new-PID-TIME)',
      make: async (dir) => {
        await mkdir(join(dir, '.session-etl.lock.new-999999-1'), { recursive: true });
      },
    },
  ];
  for (const st of states) {
    r.trials++;
    r.injected++;
    const dir = await c.temp.make('crash-constructed-');
    await st.make(dir);
    const res = await startCli(c.args, cliEnv(c.emu, dir)).result;
    check(r, res.code === 0, `${st.name}: the next run failed: ${excerpt(res)}`);
    const fin = await checkFinal(dir, 'both', c.truth);
    r.rowsCompared += fin.compared;
    check(r, fin.problems.length === 0, `${st.name}: ${fin.problems.slice(0, 2).join('; ')}`);
    const left = (await readdir(dir)).filter((n) => n.startsWith('.session-etl.lock'));
    check(r, left.length === 0 && !existsSync(join(dir, '.tmp', '2026-01-01-99999-1.parquet')), `${st.name}: debris left: ${left.join(', ')}`);
  }
}
