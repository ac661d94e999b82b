/**
 * Bench case "verify" (issue 34): `session-etl verify` of the year of the 1 M-session store, against
 * the backfill that made it (the same range, the same warm emulator), side by side: the goal is a
 * verify costing at most 1.2 × the backfill. Both are real processes (peak RSS read at exit).
 */
import type { Row } from './measured-process.js';

interface CliRun {
  wallMs: number;
  maxRssBytes: number;
  cpuMs: number;
  summary: { sessions: { new: number | null }; outcome: string; verify?: { totals: { days: number; source: number; missing: number; gone: number; changed: number } } | null };
}

/** What bench/run.ts lends the case. */
export interface VerifyBench<E> {
  cli(args: string[], emu: E): Promise<CliRun>;
  row(r: Row): void;
  fmt(n: number, digits?: number): string;
  secs(ms: number): string;
  mb(bytes: number): string;
}

/** Verifies `[from, to)` of the store `dataDir` that `backfill` made; rows for the table. */
export async function verifyRows<E>(b: VerifyBench<E>, emu: E, dataDir: string, from: string, to: string, backfill: CliRun): Promise<void> {
  const v = await b.cli(['verify', '--from', from, '--to', to, '--data-dir', dataDir], emu);
  const t = v.summary.verify?.totals;
  if (!t || t.missing + t.gone + t.changed !== 0) throw new Error(`verify of the bench's own backfill found differences: ${JSON.stringify(t)}`);
  const stored = backfill.summary.sessions.new ?? 0;
  const ratio = v.wallMs / backfill.wallMs;
  b.row({ section: '10 verify', measure: `backfill of ${b.fmt(stored)} sessions (process wall time, peak RSS)`, value: `${b.secs(backfill.wallMs)}, ${b.mb(backfill.maxRssBytes)}, ${b.fmt(backfill.cpuMs / 1000, 1)} CPU-s` });
  b.row({
    section: '10 verify',
    measure: `verify of the same range: ${b.fmt(t.days)} days, ${b.fmt(t.source)} sessions compared (process wall time, peak RSS)`,
    value: `${b.secs(v.wallMs)}, ${b.mb(v.maxRssBytes)}, ${b.fmt(v.cpuMs / 1000, 1)} CPU-s`,
  });
  b.row({ section: '10 verify', measure: 'verify / backfill (wall time)', value: b.fmt(ratio, 2), goal: '≤ 1.2', met: ratio <= 1.2 });
}
