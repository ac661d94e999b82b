/**
 * A small version of the reliability suite (`npm run test:reliability`, test/reliability/run.ts),
 * run by `npm test`: a few kill -9 trials, one run under every fault at once, one bad record in
 * both policies. Real processes, real HTTP, real files; the same checks as the full suite.
 */
import { describe, expect, it } from 'vitest';
import { DESTRUCTIVE_CASES, runBadInput } from './reliability/bad-input.js';
import { runBadResponses } from './reliability/bad-responses.js';
import { runCrashTrials } from './reliability/crash-trials.js';
import { runFaultScenarios } from './reliability/fault-runs.js';
import type { ScenarioResult } from './reliability/harness.js';

const seed = Number(process.env.RELIABILITY_SEED ?? 20261122);

function expectClean(results: ScenarioResult[]) {
  expect(results.length).toBeGreaterThan(0);
  for (const r of results) {
    expect({ scenario: r.scenario, failures: r.failures }).toEqual({ scenario: r.scenario, failures: [] });
    expect(r.trials).toBeGreaterThan(0);
    expect(r.rowsCompared).toBeGreaterThan(0);
  }
}

describe('reliability (small version of npm run test:reliability)', () => {
  it('kill -9 at a random moment, mid-fetch and mid-transaction: the re-run completes the exact data', async () => {
    const results = await runCrashTrials({ trials: 4, seed, days: 6, sessionsPerDay: 120, parallel: 2 });
    expectClean(results);
    expect(results.reduce((n, r) => n + r.injected, 0)).toBeGreaterThan(0);
  }, 120_000);

  it('every fault knob at once: the run completes with the exact data', async () => {
    const results = await runFaultScenarios({ seed, days: 5, budget: false, maxRuns: 1, requireEveryKind: false });
    expectClean(results);
    expect(results[0]!.injected).toBeGreaterThan(0);
  }, 120_000);

  it('links in the data directory, demo over an export, a format switch: refused (exit 2), nothing touched', async () => {
    const results = await runBadInput({ only: (c) => DESTRUCTIVE_CASES.includes(c) });
    for (const r of results) expect({ scenario: r.scenario, failures: r.failures }).toEqual({ scenario: r.scenario, failures: [] });
    expect(results.reduce((n, r) => n + r.trials, 0)).toBe(DESTRUCTIVE_CASES.length);
  }, 120_000);

  it('a string where an integer belongs: fails naming id and field, or is quarantined; nothing committed is lost', async () => {
    const results = await runBadResponses({ seed, only: [2] });
    expectClean(results);
  }, 120_000);
});
