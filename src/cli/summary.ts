/** Printing a run summary for a person, or as one JSON object. */
import type { RunSummary, VerifySummary } from '../pipeline/run.js';
import { describeAnomaly } from '../store/volume-anomalies.js';
import { formatVerifySummary } from './verify-report.js';

export function formatSummary(s: RunSummary): string {
  if (s.kind === 'verify') return formatVerifySummary(s as VerifySummary);
  const secs = (s.durationMs / 1000).toFixed(1);
  // Records fetched a second: a run that re-read everything as stored wrote nothing but did work.
  const fetched = s.sessions.fetched ?? s.sessions.written;
  const rate = s.durationMs > 0 ? Math.round(fetched / (s.durationMs / 1000)) : 0;
  const lines = [
    `${s.kind} ${s.runId}: ${s.outcome}${s.resumed ? ' (resumed an interrupted backfill)' : ''}`,
    `  range          ${s.range ? `${s.range.from} – ${s.range.to}` : '(nothing to fetch)'}`,
    `  windows        ${s.windows.done} of ${s.windows.total} done${s.windows.skipped ? `, ${s.windows.skipped} not started` : ''}`,
    // "written" counts sessions once each; "fetched" (the progress bar's) counts records, a boundary session twice.
    `  sessions       ${s.sessions.written} written (${s.sessions.new ?? '?'} new, ${s.sessions.updated ?? '?'} updated), ` +
      `${s.sessions.unchanged ?? '?'} unchanged (read again as stored), ${s.sessions.rejected} rejected`,
    ...(s.sessions.fetched !== undefined ? [`  records        ${recordsLine(s.sessions)}`] : []),
    `  requests       ${s.requests} (${s.retries} retries, ${s.rateLimited} rate-limited, ${s.bisections} bisections)`,
    ...(s.rateLimited || s.pausedMs
      ? [`  rate limit     paused ${(s.pausedMs / 1000).toFixed(1)} s; pace ${s.pace === null ? 'not limited' : `${s.pace.toFixed(2)} requests/s`}`]
      : []),
    `  duration       ${secs} s (${rate} records/s)`,
    `  checkpoint     ${s.checkpoint ?? '(none)'}`,
  ];
  if (s.coverageHoles.length) lines.push(`  coverage holes ${s.coverageHoles.map((h) => `${h.from}–${h.to}`).join(', ')}`);
  if (s.files.removed) lines.push('  files          none kept: the run committed nothing, so it removed what it had created');
  if (s.files.duckdb) lines.push(`  duckdb         ${s.files.duckdb}`);
  if (s.files.parquet) lines.push(`  parquet        ${s.files.parquet} (${partitionsLine(s)})`);
  if (s.volumeAnomalies?.length) {
    lines.push(`  volume         ${s.volumeAnomalies.length} anomal${s.volumeAnomalies.length === 1 ? 'y' : 'ies'}: ${s.volumeAnomalies.map(describeAnomaly).join('; ')}`);
  }
  // The error is printed once, on stderr after the summary (as `error: …`), and is in --json's summary.
  return lines.join('\n') + '\n';
}

/** Where the records fetched went: fetched = written + unchanged + brought again by another window. */
function recordsLine(x: RunSummary['sessions']): string {
  const fetched = `${x.fetched} fetched`;
  if (x.repeated === undefined || x.unchanged == null) return fetched;
  const parts = [`${x.written} written`, `${x.unchanged} unchanged`];
  if (x.repeated) parts.push(`${x.repeated} duplicates across windows (a session on a window boundary comes in both)`);
  return `${fetched} = ${parts.join(' + ')}`;
}

/** How many day partitions were rewritten, and why. */
function partitionsLine(s: RunSummary): string {
  const n = s.files.partitionsWritten.length;
  const head = `${n} partition${n === 1 ? '' : 's'} rewritten`;
  if (!n) return head;
  const why: string[] = [];
  if (s.sessions.written) why.push('new or updated sessions');
  const recovered = s.files.partitionsRecovered?.length ?? 0;
  if (recovered) why.push(`${recovered} left unfinished by an earlier run`);
  return why.length ? `${head}: ${why.join('; ')}` : head;
}

export function printSummary(s: RunSummary, json: boolean, out: NodeJS.WritableStream = process.stdout): void {
  out.write(json ? JSON.stringify(s) + '\n' : formatSummary(s));
}
