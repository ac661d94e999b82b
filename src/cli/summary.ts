/** Printing a run summary for a person, or as one JSON object. */
import type { RunSummary, VerifySummary } from '../pipeline/run.js';
import { describeAnomaly } from '../store/volume-anomalies.js';
import { formatVerifySummary } from './verify-report.js';

export function formatSummary(s: RunSummary): string {
  if (s.kind === 'verify') return formatVerifySummary(s as VerifySummary);
  const secs = (s.durationMs / 1000).toFixed(1);
  const rate = s.durationMs > 0 ? Math.round(s.sessions.written / (s.durationMs / 1000)) : 0;
  const lines = [
    `${s.kind} ${s.runId}: ${s.outcome}${s.resumed ? ' (resumed an interrupted backfill)' : ''}`,
    `  range          ${s.range ? `${s.range.from} – ${s.range.to}` : '(nothing to fetch)'}`,
    `  windows        ${s.windows.done} of ${s.windows.total} done${s.windows.skipped ? `, ${s.windows.skipped} not started` : ''}`,
    // "written" counts sessions once each; "fetched" is what the progress bar counted (records: a
    // session on a window's boundary comes in both windows).
    `  sessions       ${s.sessions.written} written (${s.sessions.new ?? '?'} new, ${s.sessions.updated ?? '?'} updated, ` +
      `${s.sessions.unchanged ?? '?'} unchanged), ${s.sessions.rejected} rejected${s.sessions.fetched !== undefined ? `; ${s.sessions.fetched} records fetched` : ''}`,
    `  requests       ${s.requests} (${s.retries} retries, ${s.rateLimited} rate-limited, ${s.bisections} bisections)`,
    ...(s.rateLimited || s.pausedMs
      ? [`  rate limit     paused ${(s.pausedMs / 1000).toFixed(1)} s; pace ${s.pace === null ? 'not limited' : `${s.pace.toFixed(2)} requests/s`}`]
      : []),
    `  duration       ${secs} s (${rate} sessions/s)`,
    `  checkpoint     ${s.checkpoint ?? '(none)'}`,
  ];
  if (s.coverageHoles.length) lines.push(`  coverage holes ${s.coverageHoles.map((h) => `${h.from}–${h.to}`).join(', ')}`);
  if (s.files.removed) lines.push('  files          none kept: the run committed nothing, so it removed what it had created');
  if (s.files.duckdb) lines.push(`  duckdb         ${s.files.duckdb}`);
  if (s.files.parquet) lines.push(`  parquet        ${s.files.parquet} (${s.files.partitionsWritten.length} partitions rewritten)`);
  if (s.volumeAnomalies?.length) {
    lines.push(`  volume         ${s.volumeAnomalies.length} anomal${s.volumeAnomalies.length === 1 ? 'y' : 'ies'}: ${s.volumeAnomalies.map(describeAnomaly).join('; ')}`);
  }
  // The error is printed once, on stderr after the summary (as `error: …`), and is in --json's summary.
  return lines.join('\n') + '\n';
}

export function printSummary(s: RunSummary, json: boolean, out: NodeJS.WritableStream = process.stdout): void {
  out.write(json ? JSON.stringify(s) + '\n' : formatSummary(s));
}
