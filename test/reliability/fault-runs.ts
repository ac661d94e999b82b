/**
 * Faults: the emulator's fault knobs all at once (5xx, resets, truncated bodies, partial answers,
 * 429 quota with Retry-After, a result cap, a span cap and silent truncation) — the run must
 * complete with the exact data. Then faults that outlast the retry budget: the run fails with a
 * clear error, leaves a consistent state, and the next run completes it exactly.
 */
import { startEmulator, type Emulator, type EmulatorFaults } from '../../src/emulator/index.js';
import {
  check, cliEnv, dayStart, DAY, excerpt, isoDay, newResult, sleep, startCli, TempDirs, timed, truthBetween,
  type ScenarioResult,
} from './harness.js';
import { checkCrashInvariants, checkFinal, readStore } from './inspect-store.js';

export interface FaultOptions {
  seed: number;
  days?: number;
  sessionsPerDay?: number;
  /** Also run the "faults outlast the retry budget" cases. */
  budget?: boolean;
  /** Runs under all faults at most (until every kind was met). Default 3. */
  maxRuns?: number;
  /** Fail when a kind of fault was never injected (default true). */
  requireEveryKind?: boolean;
  log?: (line: string) => void;
}

export const ALL_FAULTS: EmulatorFaults = {
  latencyMs: 5,
  serverErrorRate: 0.15,
  resetRate: 0.05,
  truncateRate: 0.05,
  partialErrorRate: 0.1,
  rateLimitRps: 10,
  maxResults: 180,
  maxSpanSeconds: 2 * DAY,
  truncateResultsTo: 100,
};

const FAULT_KINDS = ['serverError', 'reset', 'truncate', 'partial', 'rateLimited', 'maxResults', 'maxSpan', 'truncatedResults'];

function sumFaults(emu: Emulator): number {
  return Object.values(emu.stats().faults).reduce((a, b) => a + b, 0);
}

export async function runFaultScenarios(o: FaultOptions): Promise<ScenarioResult[]> {
  const log = o.log ?? (() => {});
  const days = o.days ?? 14;
  const nowS = Math.floor(Date.now() / 1000);
  const from = dayStart(days + 2, nowS);
  const to = from + days * DAY;
  const emu = await startEmulator({ seed: o.seed % 1000, from: from - DAY, to: nowS, now: nowS, sessionsPerDay: o.sessionsPerDay ?? 200 });
  const temp = new TempDirs();
  const truth = truthBetween(emu, from, to);
  const range = ['--from', isoDay(from), '--to', isoDay(to)];
  const out: ScenarioResult[] = [];
  try {
    const all = newResult('2. faults', 'all knobs at once: 15 % 5xx, 5 % resets, 5 % truncated bodies, 10 % partial errors, 429 quota with Retry-After, result cap, span cap, silent truncation');
    out.push(
      await timed(all, async () => {
        // Runs until every kind of fault has been met at least once (the dice are per request).
        const seen: Record<string, number> = {};
        const summaries: string[] = [];
        for (let i = 0; i < (o.maxRuns ?? 3); i++) {
          const dir = await temp.make('faults-');
          emu.setFaults(ALL_FAULTS);
          emu.resetStats();
          const args = ['backfill', ...range, '--chunk', '7d', '--max-results-per-query', '100', '--max-attempts', '10', '--json', '--no-progress'];
          const res = await startCli(args, cliEnv(emu, dir)).result;
          const stats = emu.stats();
          emu.setFaults({});
          all.trials++;
          all.injected += sumFaults(emu);
          for (const [k, v] of Object.entries(stats.faults)) seen[k] = (seen[k] ?? 0) + v;
          check(all, res.code === 0, `the run under faults failed: ${excerpt(res)}`);
          if (res.code === 0) {
            const s = JSON.parse(res.stdout) as { retries: number; rateLimited: number; bisections: number; requests: number };
            check(all, s.retries > 0 && s.bisections > 0, `summary does not show the faults: ${res.stdout.slice(0, 300)}`);
            summaries.push(`${s.requests} requests, ${s.retries} retries, ${s.rateLimited} 429s waited out, ${s.bisections} bisections`);
          }
          const fin = await checkFinal(dir, 'both', truth);
          all.rowsCompared += fin.compared;
          check(all, fin.problems.length === 0, `data after the faulty run: ${fin.problems.slice(0, 3).join('; ')}`);
          log(`faults: all knobs, run ${i + 1}: ${res.code === 0 ? 'ok' : 'FAILED'} in ${res.durationMs} ms`);
          if (FAULT_KINDS.every((k) => (seen[k] ?? 0) > 0)) break;
        }
        if (o.requireEveryKind !== false) {
          for (const kind of FAULT_KINDS) check(all, (seen[kind] ?? 0) > 0, `fault ${kind} was never injected (the scenario did not test it)`);
        }
        all.notes.push(
          `faults by kind: ${Object.entries(seen).map(([k, v]) => `${k} ${v}`).join(', ')}; the runs made ${summaries.join('; ')}`,
        );
      }),
    );
    if (o.budget !== false) {
      const cases: Array<{ name: string; faults: EmulatorFaults; extra: string[]; expect: RegExp }> = [
        {
          name: 'every request answers 5xx once the run is under way (--max-attempts 3)',
          faults: { serverErrorRate: 1 },
          extra: ['--max-attempts', '3'],
          expect: /HTTP 50[023]/,
        },
        {
          name: 'every connection is reset once the run is under way (--max-attempts 3)',
          faults: { resetRate: 1 },
          extra: ['--max-attempts', '3'],
          expect: /connection|reset|socket|network/i,
        },
        {
          name: '429 with a Retry-After longer than the client honours (300 s)',
          faults: { rateLimitRps: 0.0005 },
          extra: [],
          expect: /429|rate limit|Retry-After/i,
        },
        {
          name: 'every answer is partial (data + errors) down to the minimum chunk (--min-chunk 3h)',
          faults: { partialErrorRate: 1 },
          extra: ['--min-chunk', '3h'],
          expect: /cannot be split below the minimum chunk/,
        },
      ];
      for (const c of cases) {
        const r = newResult('2. faults', `faults outlast the retry budget: ${c.name}`);
        out.push(await timed(r, () => budgetCase(emu, temp, r, range, truth, c)));
        log(`faults: ${c.name}: ${r.failures.length ? 'FAILED' : 'ok'}`);
      }
    }
  } finally {
    await emu.close();
    await temp.cleanup();
  }
  return out;
}

/**
 * Starts a clean run, switches the faults on once it has committed a few windows, expects exit 1
 * with a clear error, checks the state, and completes the data with a clean run.
 */
async function budgetCase(
  emu: Emulator,
  temp: TempDirs,
  r: ScenarioResult,
  range: string[],
  truth: ReturnType<typeof truthBetween>,
  c: { faults: EmulatorFaults; extra: string[]; expect: RegExp },
): Promise<void> {
  const dir = await temp.make('budget-');
  const args = ['backfill', ...range, '--chunk', '6h', '--concurrency', '2', '--json', '--no-progress'];
  emu.setFaults({ latencyMs: 40 });
  emu.resetStats();
  r.trials++;
  const child = startCli([...args, ...c.extra], cliEnv(emu, dir));
  const flipAt = Date.now() + 20_000;
  while (emu.stats().requests < 12 && Date.now() < flipAt && child.exitCode === null) await sleep(10);
  emu.setFaults({ latencyMs: 40, ...c.faults });
  const res = await child.result;
  r.injected += sumFaults(emu);
  emu.setFaults({});
  check(r, res.code === 1, `expected exit 1, got ${excerpt(res)}`);
  const err = res.stderr.split('\n').filter((l) => l.startsWith('error:')).join('\n');
  check(r, /window \d{4}-\d{2}-\d{2}T\S+ failed/.test(err), `the error does not name the window: ${err.slice(0, 300)}`);
  check(r, c.expect.test(err), `the error does not say what failed (${c.expect}): ${err.slice(0, 300)}`);
  check(r, /is committed|no window was committed/.test(err) && /run the same command again/.test(err), `the error does not say what is left and how to continue: ${err.slice(0, 300)}`);
  check(r, !/\n\s+at /.test(res.stderr), 'a stack trace was printed');
  if (res.stdout.trim()) {
    const s = JSON.parse(res.stdout) as { outcome: string; error?: string };
    check(r, s.outcome === 'failed' && Boolean(s.error), `summary outcome ${s.outcome}`);
  }
  const snap = await readStore(dir, 'both');
  const inv = checkCrashInvariants(snap, 'both', emu);
  r.rowsCompared += inv.compared;
  check(r, inv.problems.length === 0, `state after the failed run: ${inv.problems.slice(0, 3).join('; ')}`);
  const last = snap.runs.find((x) => x.outcome === 'failed');
  check(r, Boolean(last?.error), 'the failed run is not recorded in _runs with its error');
  const again = await startCli(args, cliEnv(emu, dir)).result;
  check(r, again.code === 0, `the next run did not complete: ${excerpt(again)}`);
  const fin = await checkFinal(dir, 'both', truth);
  r.rowsCompared += fin.compared;
  check(r, fin.problems.length === 0, `data after the next run: ${fin.problems.slice(0, 3).join('; ')}`);
  r.notes.push(`error printed: ${err.split('\n')[0]!.replace(/\/tmp\/\S+/g, '…').slice(0, 260)}`);
}
