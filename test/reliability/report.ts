/** The table: printed on the terminal and written to docs/reliability.md with the date and the commit. */
import type { ScenarioResult } from './harness.js';

export interface RunMeta {
  date: string;
  commit: string;
  node: string;
  cpus: number;
  seed: number;
  durationMs: number;
  /** How the suite was sized (trials, rounds, parallelism). */
  settings: string;
}

export interface Finding {
  /** Which row of the table found it. */
  area: string;
  found: string;
  fix: string;
}

const fmt = (n: number) => n.toLocaleString('en-US');

export function totals(results: ScenarioResult[]) {
  return results.reduce(
    (t, r) => ({
      trials: t.trials + r.trials,
      injected: t.injected + r.injected,
      rowsCompared: t.rowsCompared + r.rowsCompared,
      checks: t.checks + r.checks,
      failed: t.failed + r.failures.length,
    }),
    { trials: 0, injected: 0, rowsCompared: 0, checks: 0, failed: 0 },
  );
}

/** A fixed-width table for the terminal. */
export function renderText(results: ScenarioResult[]): string {
  const head = ['area', 'what was tried', 'trials', 'injected', 'rows compared', 'checks', 'result'];
  const rows = results.map((r) => [
    r.area,
    r.scenario.length > 70 ? `${r.scenario.slice(0, 69)}…` : r.scenario,
    fmt(r.trials),
    fmt(r.injected),
    fmt(r.rowsCompared),
    fmt(r.checks),
    r.failures.length ? `FAIL (${r.failures.length})` : 'pass',
  ]);
  const t = totals(results);
  rows.push(['total', '', fmt(t.trials), fmt(t.injected), fmt(t.rowsCompared), fmt(t.checks), t.failed ? `FAIL (${t.failed})` : 'pass']);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i >= 2 && i <= 5 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  const out = [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(0, -1).map(line), widths.map((w) => '-'.repeat(w)).join('  '), line(rows[rows.length - 1]!)];
  for (const r of results) for (const f of r.failures.slice(0, 5)) out.push(`  FAIL ${r.area} / ${r.scenario}: ${f.slice(0, 500)}`);
  return out.join('\n');
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderMarkdown(results: ScenarioResult[], meta: RunMeta, findings: Finding[]): string {
  const t = totals(results);
  const lines: string[] = [
    '# Reliability',
    '',
    '<!-- Written by `npm run test:reliability` (test/reliability/run.ts); do not edit by hand: run it again. -->',
    '',
    `Run on ${meta.date} at commit \`${meta.commit}\` — Node ${meta.node}, ${meta.cpus} CPUs, seed ${meta.seed} ` +
      `(\`RELIABILITY_SEED=${meta.seed}\` replays it), ${Math.round(meta.durationMs / 1000)} s. ${meta.settings}`,
    '',
    `**${t.failed ? `${t.failed} checks FAILED` : 'Every check passed'}**: ${fmt(t.trials)} trials, ${fmt(t.injected)} faults injected ` +
      `(kills, server faults, bad records, bad inputs, hostile answers, second writers), ${fmt(t.rowsCompared)} rows compared value by value with the emulator's data, ${fmt(t.checks)} checks.`,
    '',
    '| Area | What was tried | Trials | Injected | Rows compared | Checks | Result |',
    '|---|---|--:|--:|--:|--:|---|',
    ...results.map(
      (r) =>
        `| ${cell(r.area)} | ${cell(r.scenario)} | ${fmt(r.trials)} | ${fmt(r.injected)} | ${fmt(r.rowsCompared)} | ${fmt(r.checks)} | ${r.failures.length ? `**FAIL** (${r.failures.length})` : 'pass'} |`,
    ),
    `| **total** | | **${fmt(t.trials)}** | **${fmt(t.injected)}** | **${fmt(t.rowsCompared)}** | **${fmt(t.checks)}** | ${t.failed ? `**FAIL** (${t.failed})` : '**pass**'} |`,
    '',
    '*Injected*: kills (SIGKILL that landed), faults the emulator counted, records rewritten by the corrupting proxy, bad inputs,',
    'ENOSPC failures, secrets searched for, extra writers. *Rows compared*: every row checked field by field against the',
    "emulator's record (after each kill: every session of every covered window; after each completing run: the whole",
    'DuckDB table and the whole Parquet dataset).',
    '',
    '## What each area checks',
    '',
    '1. **Crash anywhere.** Backfills of a few thousand sessions (16 days, 6-hour windows, 30 ms latency) are killed with',
    '   SIGKILL after a random delay or at a named crash point (`SESSION_ETL_CRASH_AT`), on a fresh directory or while',
    '   refreshing a completed one, then run again to completion. After every kill the store is read back independently',
    '   (DuckDB read-only, Parquet with hyparquet): every covered window holds every session started in it, value for value',
    '   (the checkpoint never ran ahead of committed data); every Parquet file is complete; a partition not marked pending',
    '   equals the committed rows of its date. A reader lists `parquet/sessions/` every 4 ms throughout: every name must end',
    '   in `.parquet` and every file it opens must have `PAR1` at both ends and a footer that fits. After the completing run',
    "   the DuckDB table and the Parquet dataset must equal the emulator's data exactly (same ids, no duplicate, every value).",
    "2. **Faults.** All of the emulator's fault knobs at once; then faults that outlast the retry budget: exit 1, an error",
    '   naming the window, the cause, what is committed and how to continue; the state checked; the next run completes.',
    '3. **Bad responses.** A proxy between the CLI and the emulator rewrites chosen records; each case runs with',
    '   `--on-invalid fail` and `--on-invalid quarantine` over a directory holding committed data, then a clean run completes.',
    '4. **Bad input.** Each flag, configuration key and environment variable with wrong values, and unusable data',
    '   directories: exit 2 (3 when busy), an error naming the flag or key, no stack trace, and the whole directory tree',
    '   byte-identical before and after. A full disk during a write: exit 1 saying so, the earlier data readable and intact,',
    '   and the same command completes once there is room.',
    '5. **Secrets.** Every command with a distinctive API key and client secret, including runs against a server that',
    '   echoes the key back (also hex and HTML-entity encoded); every output and every file written is searched for the key',
    '   (plain, base64, URL-encoded, UTF-16, hex, HTML entities, and cut short) and for the OAuth tokens outside the token file.',
    '6. **Concurrency.** Writers started together, many times: one runs, the others refuse with exit 3 naming the holder',
    '   (or queue with `--wait`); the store is then checked exactly.',
    '7. **Trust.** What others can plant or tamper with, through the CLI against a real S3-compatible server (s3rver): a',
    "   bucket state of an earlier release whose macro reads the key file, a pending partition walking out of the data",
    '   directory, a state table of another shape: refused (exit 2), nothing written outside the data directory, the key in',
    '   no object. Lock holder files that are not JSON, `null` or of another shape, locally and in the bucket: never a crash,',
    '   never held for ever (the next run completes, exactly). `verify --repair --delete-missing` against a source capped at',
    '   3 records or answering nothing: exit 5, nothing removed; `--max-delete N` allows it.',
    '',
    'Test-only hooks (src/util/crash-point.ts): `SESSION_ETL_CRASH_AT=<point>[:<n>]` kills the process at the n-th',
    'passage through fetch, mid-transaction, after-commit, mid-merge, after-merge, mid-parquet-rewrite or',
    'after-parquet-rename; `SESSION_ETL_FAULT=enospc:<point>[:<n>]` throws ENOSPC at mid-transaction or mid-parquet-rewrite (the full-disk fallback',
    'where a tmpfs cannot be mounted). Unset, neither does anything.',
    '',
  ];
  if (findings.length) {
    lines.push('## Found by the suite, and fixed', '', '| Found by | What went wrong | Fix |', '|---|---|---|');
    for (const f of findings) lines.push(`| ${cell(f.area)} | ${cell(f.found)} | ${cell(f.fix)} |`);
    lines.push('');
  }
  const notes = results.filter((r) => r.notes.length);
  if (notes.length) {
    lines.push('## Observations from this run', '');
    for (const r of notes) {
      lines.push(`- **${cell(r.area)} — ${cell(r.scenario)}**`);
      for (const n of r.notes.slice(0, 12)) lines.push(`  - ${n.replace(/\n/g, ' ')}`);
    }
    lines.push('');
  }
  const failed = results.filter((r) => r.failures.length);
  if (failed.length) {
    lines.push('## Failures', '');
    for (const r of failed) {
      lines.push(`- **${cell(r.area)} — ${cell(r.scenario)}**`);
      for (const f of r.failures.slice(0, 10)) lines.push(`  - ${f.replace(/\n/g, ' ').slice(0, 600)}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}
