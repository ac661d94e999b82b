/**
 * Concurrency: two (or three) writers at once on one data directory, many times — started at the
 * same instant on a fresh directory, on an existing store, racing to take over a lock left by
 * kill -9, and facing a lock directory a writer died in before writing its holder file. Every
 * round: exactly one writer runs, the others refuse with exit 3 naming the holder (or wait, with
 * --wait), nothing is corrupted, and the data equals the emulator's exactly.
 */
import { mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import {
  check, cliEnv, dayStart, DAY, excerpt, isoDay, newResult, Rng, sleep, startCli, TempDirs, timed, truthBetween,
  type CliRun, type ScenarioResult,
} from './harness.js';
import { checkCrashInvariants, checkFinal } from './inspect-store.js';

export interface ConcurrencyOptions {
  rounds: number;
  /** Only these kinds of round (default all, in turn). */
  kinds?: Kind[];
  seed: number;
  log?: (line: string) => void;
}

export type Kind = 'fresh' | 'existing' | 'stale-lock' | 'three' | 'wait';

const LABELS: Record<Kind, string> = {
  fresh: 'two backfills started together on a fresh directory',
  existing: 'a backfill and an export started together on an existing store',
  'stale-lock': 'three writers racing to take over a lock left by kill -9',
  three: 'three writers started together',
  wait: 'two writers with --wait: the second queues, both succeed',
};

export async function runConcurrency(o: ConcurrencyOptions): Promise<ScenarioResult[]> {
  const log = o.log ?? (() => {});
  const rng = new Rng(o.seed ^ 0x5eed);
  const nowS = Math.floor(Date.now() / 1000);
  const from = dayStart(12, nowS);
  const to = from + 8 * DAY;
  const emu = await startEmulator({ seed: (o.seed % 1000) + 3, from: from - DAY, to: nowS, now: nowS, sessionsPerDay: 100, faults: { latencyMs: 25 } });
  const temp = new TempDirs();
  const truth = truthBetween(emu, from, to);
  const backfill = ['backfill', '--from', isoDay(from), '--to', isoDay(to), '--chunk', '12h', '--concurrency', '2', '--json', '--no-progress'];
  const exportArgs = ['export', '--since', isoDay(from), '--concurrency', '2', '--json', '--no-progress', '--settle', '1m'];
  const rows = new Map<Kind, ScenarioResult>();
  const kinds: Kind[] = o.kinds ?? ['fresh', 'existing', 'stale-lock', 'three', 'wait'];
  try {
    // A completed store to start the "existing" rounds from.
    const base = await temp.make('conc-base-');
    const b = await startCli(backfill, cliEnv(emu, base)).result;
    if (b.code !== 0) throw new Error(`base backfill failed: ${excerpt(b)}`);
    for (let i = 0; i < o.rounds; i++) {
      const kind = kinds[i % kinds.length]!;
      let r = rows.get(kind);
      if (!r) rows.set(kind, (r = newResult('6. concurrency', LABELS[kind])));
      const res = r;
      await timed(res, () => round(kind, { emu, temp, backfill, exportArgs, truth, r: res, rng, base, from, to }));
    }
    // A lock directory a writer died in between creating it and writing its holder file.
    const r = newResult('6. concurrency', 'a lock directory left without its holder file (a writer killed in between)');
    await timed(r, async () => {
      r.trials++;
      r.injected++;
      const dir = await temp.make('conc-empty-lock-');
      await mkdir(join(dir, '.session-etl.lock'), { recursive: true });
      const run = await startCli(backfill, cliEnv(emu, dir)).result;
      check(r, run.code === 0, `a writer facing an empty lock directory: ${excerpt(run)}`);
      const fin = await checkFinal(dir, 'both', truth);
      r.rowsCompared += fin.compared;
      check(r, fin.problems.length === 0, fin.problems.slice(0, 2).join('; '));
    });
    const out = [...rows.values(), r];
    for (const x of out) log(`concurrency: ${x.scenario}: ${x.trials} rounds, ${x.failures.length ? 'FAILED ' + x.failures[0] : 'ok'}`);
    return out;
  } finally {
    await emu.close();
    await temp.cleanup();
  }
}

interface RoundContext {
  emu: Emulator;
  temp: TempDirs;
  backfill: string[];
  exportArgs: string[];
  truth: ReturnType<typeof truthBetween>;
  r: ScenarioResult;
  rng: Rng;
  base: string;
  from: number;
  to: number;
}

async function round(kind: Kind, c: RoundContext): Promise<void> {
  const { r, emu } = c;
  r.trials++;
  const dir = await c.temp.make(`conc-${kind}-`);
  const env = cliEnv(emu, dir);
  if (kind === 'existing') {
    const { cp } = await import('node:fs/promises');
    await cp(c.base, dir, { recursive: true });
  }
  if (kind === 'stale-lock') {
    // A writer killed with -9 while it held the lock.
    const victim = startCli(c.backfill, env);
    const deadline = Date.now() + 15_000;
    while (!existsSync(join(dir, '.session-etl.lock', 'holder.json')) && Date.now() < deadline) await sleep(10);
    await sleep(c.rng.int(50, 400));
    victim.kill('SIGKILL');
    await victim.result;
  }
  const argsFor = (i: number): string[] => {
    if (kind === 'existing') return i === 0 ? c.backfill : c.exportArgs;
    if (kind === 'wait') return [...c.backfill, '--wait'];
    return c.backfill;
  };
  const n = kind === 'three' || kind === 'stale-lock' ? 3 : 2;
  const procs = Array.from({ length: n }, (_, i) => startCli(argsFor(i), env));
  r.injected += n - 1;
  const results: CliRun[] = await Promise.all(procs.map((p) => p.result));
  const codes = results.map((x) => x.code);
  if (kind === 'wait') {
    check(r, codes.every((x) => x === 0), `with --wait both should succeed: ${results.map(excerpt).join(' / ')}`);
  } else {
    const ok = codes.filter((x) => x === 0).length;
    const refused = results.filter((x) => x.code === 3);
    // A refused writer may also have arrived after the winner finished: then it runs too (exit 0).
    check(r, ok >= 1 && ok + refused.length === n, `exit codes ${codes.join(', ')}: ${results.filter((x) => x.code !== 0 && x.code !== 3).map(excerpt).join(' / ')}`);
    check(r, refused.length >= 1 || ok === n, `nobody refused: ${codes.join(', ')}`);
    for (const x of refused) {
      const pids = procs.map((p) => p.pid);
      const named = pids.some((pid) => x.stderr.includes(`pid ${pid}`)) || /is open in another process/.test(x.stderr);
      check(r, named, `the refusal does not name the holder: ${x.stderr.trim().slice(0, 240)}`);
    }
    if (refused.length === 0) r.notes.push(`${kind}: in one round the writers did not overlap (all exit 0)`);
  }
  // Nothing corrupted: the store reads back exactly (completing it first if the winner was an export).
  const again = await startCli(c.backfill, env).result;
  check(r, again.code === 0, `the run after the round failed: ${excerpt(again)}`);
  // An export also loads what started after the range (up to now - settle): compared by the invariants.
  const fin = await checkFinal(dir, 'both', c.truth, kind === 'existing' ? { onlyStartedIn: { from: c.from, to: c.to } } : {});
  r.rowsCompared += fin.compared;
  check(r, fin.problems.length === 0, `${kind}: ${fin.problems.slice(0, 2).join('; ')}`);
  const inv = checkCrashInvariants(fin.snap, 'both', emu);
  r.rowsCompared += inv.compared;
  check(r, inv.problems.length === 0, `${kind}: ${inv.problems.slice(0, 2).join('; ')}`);
}
