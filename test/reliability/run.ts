/**
 * `npm run test:reliability`: runs every reliability scenario against the emulator, prints the
 * table, writes it to docs/reliability.md with the date and the commit, and exits 1 if any check
 * failed. A script, not a test file: `npm test` runs a small version (test/reliability-smoke.test.ts).
 *
 * Environment (all optional):
 *   RELIABILITY_SEED          replay a run (printed in the table's heading)
 *   RELIABILITY_CRASH_TRIALS  crash trials (default 56)
 *   RELIABILITY_ROUNDS        concurrency rounds (default 20)
 *   RELIABILITY_PARALLEL      crash trials run side by side (default 2)
 *   RELIABILITY_ONLY          areas to run, e.g. "1,3" or "4,7" (the doc is then not written)
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { runBadInput } from './bad-input.js';
import { runBadResponses } from './bad-responses.js';
import { runConcurrency } from './concurrency.js';
import { runCrashTrials } from './crash-trials.js';
import { runFaultScenarios } from './fault-runs.js';
import { FINDINGS } from './findings.js';
import { runFullDisk } from './full-disk.js';
import { REPO_ROOT, type ScenarioResult } from './harness.js';
import { renderMarkdown, renderText, totals } from './report.js';
import { runSecrets } from './secrets.js';
import { runTrust } from './trust.js';

const env = process.env;
const seed = Number(env.RELIABILITY_SEED ?? Math.floor(Math.random() * 1e9));
const crashTrials = Number(env.RELIABILITY_CRASH_TRIALS ?? 56);
const rounds = Number(env.RELIABILITY_ROUNDS ?? 20);
const parallel = Number(env.RELIABILITY_PARALLEL ?? 2);
const only = env.RELIABILITY_ONLY ? new Set(env.RELIABILITY_ONLY.split(',').map((s) => s.trim())) : undefined;
const t0 = Date.now();
const log = (line: string) => process.stderr.write(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

/** The commit tested, marked when code differs from it (docs/ holds reports like this one's, not code). */
function commit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', '--', '.', ':!docs'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    return dirty ? `${sha} + uncommitted changes` : sha;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

const steps: Array<[string, () => Promise<ScenarioResult[]>]> = [
  ['1', () => runCrashTrials({ trials: crashTrials, seed, parallel, log })],
  ['2', () => runFaultScenarios({ seed, log })],
  ['3', () => runBadResponses({ seed, log })],
  ['4', async () => [...(await runBadInput({ log })), await runFullDisk({ seed, log })]],
  ['5', async () => [await runSecrets({ seed, log })]],
  ['6', () => runConcurrency({ rounds, seed, log })],
  ['7', () => runTrust({ seed, log })],
];

log(`reliability suite: seed ${seed}, ${crashTrials} crash trials (${parallel} side by side), ${rounds} concurrency rounds`);
const results: ScenarioResult[] = [];
for (const [area, step] of steps) {
  if (only && !only.has(area)) continue;
  const s = Date.now();
  try {
    results.push(...(await step()));
  } catch (err) {
    results.push({
      area: `${area}. (aborted)`,
      scenario: 'the scenario could not run',
      trials: 0, injected: 0, rowsCompared: 0, checks: 1,
      failures: [(err as Error)?.stack ?? String(err)],
      notes: [],
      durationMs: Date.now() - s,
    });
  }
  log(`area ${area} done in ${Math.round((Date.now() - s) / 1000)} s`);
}

const durationMs = Date.now() - t0;
process.stdout.write(`\n${renderText(results)}\n\n`);
const t = totals(results);
if (!only) {
  const md = renderMarkdown(
    results,
    {
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      commit: commit(),
      node: process.version,
      cpus: cpus().length,
      seed,
      durationMs,
      settings: `${crashTrials} crash trials (${parallel} side by side), ${rounds} concurrency rounds.`,
    },
    FINDINGS,
  );
  writeFileSync(join(REPO_ROOT, 'docs', 'reliability.md'), md + '\n');
  process.stdout.write(`written to docs/reliability.md\n`);
}
process.stdout.write(
  `${t.failed ? `${t.failed} checks FAILED` : 'all checks passed'}: ${t.trials} trials, ${t.injected} injected, ` +
    `${t.rowsCompared} rows compared, ${t.checks} checks, ${Math.round(durationMs / 1000)} s (seed ${seed})\n`,
);
process.exitCode = t.failed ? 1 : 0;
