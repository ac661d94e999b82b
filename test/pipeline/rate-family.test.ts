/**
 * A 50-seed slice of the rate family (issue 41, bench/rate-family.ts) as a deterministic
 * regression check: the same seeds on a virtual clock give the same figures on every run.
 *
 * Each goal of issue 41 is asserted over the servers with rate-limit headers and those without.
 * The controller in place today misses most of them (docs/benchmarks.md, "Rate family"): those are
 * listed in MISSED and run as `it.fails`, so that a controller that meets one turns its test red
 * until it is taken off the list. The figures it reaches today are floors it must not fall below.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  capacityAt, judge, measureFamily, quantile, quotaRateAt, scenarioOf, type ControllerFactory, type FamilyController, type GoalRow, type Measured,
} from '../../bench/rate-family.js';

const SEEDS = 50;
const GOALS = ['used quota', 'quota 429s', 'strays cost their pauses', 'raised quota', 'concurrency raised again'] as const;
const HALVES = ['headers', 'no headers'] as const;

/** The goals today's controller misses on seeds 1–50. */
const MISSED = new Set([
  'strays cost their pauses|headers',
  'used quota|no headers', 'quota 429s|no headers', 'strays cost their pauses|no headers', 'raised quota|no headers',
]);

let measured: Measured[];
let rows: GoalRow[];

beforeAll(async () => {
  measured = await measureFamily(SEEDS);
  rows = judge(measured);
}, 60_000);

const rowOf = (goal: string, half: string) => {
  const row = rows.find((r) => r.goal.startsWith(goal) && r.half === half);
  if (!row) throw new Error(`no row for ${goal} (${half})`);
  return row;
};

describe(`the rate family, seeds 1–${SEEDS}`, () => {
  it('has both halves, every story and strays in each half', () => {
    for (const half of HALVES) {
      const ms = measured.filter((m) => m.headers === (half === 'headers'));
      expect(ms.length).toBeGreaterThanOrEqual(15);
      expect(ms.some((m) => m.stray)).toBe(true);
      expect(ms.some((m) => m.raised !== undefined)).toBe(true);
      expect(ms.some((m) => m.regainedMs !== undefined)).toBe(true);
    }
  });

  it('is deterministic: a seed measured again gives the same figures', async () => {
    const again = await measureFamily(3, 1);
    expect(again).toEqual(measured.slice(0, 3));
  });

  for (const half of HALVES) {
    for (const goal of GOALS) {
      const known = MISSED.has(`${goal}|${half}`);
      (known ? it.fails : it)(`${goal} (${half})${known ? ': missed by today\'s controller' : ''}`, () => {
        const row = rowOf(goal, half);
        expect(row.met, `${row.goal}, ${row.half}: ${row.figure}; worst ${JSON.stringify(row.worst)}`).toBe(true);
      });
    }
  }

  it("does not fall below today's controller's figures", () => {
    const half = (h: string) => measured.filter((m) => m.headers === (h === 'headers'));
    const used = (h: string) => quantile(half(h).map((m) => m.used), 0.5);
    const within5 = (h: string) => half(h).filter((m) => m.quota429Share <= 0.05).length / half(h).length;
    const strayOk = (h: string) => half(h).filter((m) => m.stray?.ok).length;
    const raised = (h: string) => quantile(half(h).filter((m) => m.raised !== undefined).map((m) => m.raised!), 0.5);
    expect(used('headers')).toBeGreaterThanOrEqual(0.98);
    expect(used('no headers')).toBeGreaterThanOrEqual(0.91);
    expect(within5('headers')).toBeGreaterThanOrEqual(0.95);
    expect(within5('no headers')).toBeGreaterThanOrEqual(0.62);
    expect(strayOk('headers')).toBeGreaterThanOrEqual(8);
    expect(strayOk('no headers')).toBeGreaterThanOrEqual(6);
    expect(raised('headers')).toBeGreaterThanOrEqual(0.95);
    expect(raised('no headers')).toBeGreaterThanOrEqual(0.71);
  });
});

/**
 * A controller that knows the server: it paces at 97 % of the quota left to us at every moment and
 * keeps to a concurrency limit while there is one. It shows that the family's goals measure what
 * they say: a client that knows the quota meets them.
 */
function oracle(seed: number): ControllerFactory {
  const s = scenarioOf(seed);
  return (o) => {
    const start = o.now();
    let next = -Infinity;
    let inFlight = 0;
    const capAt = (t: number) => (s.story === 'concurrency' && t < s.fromMs ? s.factor : s.maxConcurrency);
    const waiters: Array<() => void> = [];
    const c: FamilyController = {
      concurrency: capAt(0),
      pace: undefined,
      onConcurrencyChange: undefined,
      async beforeAttempt() {
        for (;;) {
          const now = o.now();
          const t = now - start;
          if (capAt(t) !== c.concurrency) {
            (c as { concurrency: number }).concurrency = capAt(t);
            c.onConcurrencyChange?.(capAt(t));
          }
          if (inFlight >= capAt(t)) {
            await Promise.race([new Promise<void>((r) => waiters.push(r)), o.sleep(Math.max(1, s.fromMs - t))]);
            continue;
          }
          const rate = 0.97 * Math.min(quotaRateAt(s, t), 1.2 * capacityAt(s, t));
          const at = Math.max(next, now);
          if (at > now) {
            await o.sleep(at - now);
            continue;
          }
          // The window stretched by the spread of the latency out (±12.5 % of it): a window's
          // worth of requests never arrives within less than the window.
          next = now + (1000 / rate) * ((s.windowMs + 0.25 * s.latencyMs) / s.windowMs);
          inFlight++;
          let held = true;
          return {
            release: () => {
              if (!held) return;
              held = false;
              inFlight--;
              waiters.splice(0).forEach((w) => w());
            },
          };
        }
      },
      onSuccess() {},
      onRateLimited() {},
      onRateLimitHint() {},
    };
    return c;
  };
}

describe('the rate family measures what it says', () => {
  it('a controller that knows the quota meets the goals of used quota, 429s, strays and a raise on both halves', async () => {
    const ms: Measured[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) ms.push((await measureFamily(1, seed, oracle(seed)))[0]!);
    for (const row of judge(ms).filter((r) => !r.goal.startsWith('concurrency'))) {
      expect(row.met, `${row.goal}, ${row.half}: ${row.figure}; worst ${JSON.stringify(row.worst)}`).toBe(true);
    }
  }, 60_000);
});
