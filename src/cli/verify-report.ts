/** How `verify` prints what it found, and how `status` names the latest verification. */
import type { VerifySummary } from '../pipeline/verify.js';
import type { LastVerification } from '../store/verify-log.js';

/** Days listed one by one when there are no more than this many; beyond, only those that differ. */
const ALL_DAYS_UP_TO = 31;

export function formatVerifySummary(s: VerifySummary): string {
  const r = s.verify;
  const lines = [
    `verify ${s.runId}: ${s.outcome === 'succeeded' ? (r?.totals.differingDays ? 'repaired' : 'the store equals the source') : r?.refused.length ? 'failed: removals refused' : s.outcome}`,
    `  range          ${s.range ? `${s.range.from} – ${s.range.to}` : '(nothing to fetch)'}${r?.sampled ? `; ${r.sampled.length} day(s) drawn: ${r.sampled.join(', ')}` : ''}`,
    `  windows        ${s.windows.done} of ${s.windows.total} fetched${s.windows.skipped ? `, ${s.windows.skipped} not started` : ''}${s.sessions.fetched !== undefined ? `; ${s.sessions.fetched} records fetched` : ''}`,
    `  requests       ${s.requests} (${s.retries} retries, ${s.rateLimited} rate-limited, ${s.bisections} bisections)`,
    `  duration       ${(s.durationMs / 1000).toFixed(1)} s`,
  ];
  if (r) {
    const t = r.totals;
    lines.push(
      `  compared       ${t.days} day(s): ${t.source} sessions from the source, ${t.stored} stored; ` +
        `${t.missing} missing, ${t.gone} no longer returned by the source, ${t.changed} changed`,
    );
    if (r.repair) lines.push(`  repaired       ${t.repaired} session(s) committed${r.deleteMissing ? `, ${t.deleted} removed` : t.gone ? ` (the ${t.gone} no longer returned are kept: --delete-missing removes them)` : ''}`);
    if (r.refused.length) {
      const n = r.refused.reduce((k, d) => k + d.wouldDelete, 0);
      lines.push(`  refused        ${n} removal(s) on ${r.refused.length} day(s), nothing removed from them: ${r.refused.map((d) => `${d.date} (${d.wouldDelete}: ${d.reasons.join('; ')})`).join(', ')}`);
    }
    const refused = new Set(r.refused.map((d) => d.date));
    const shown = r.days.length <= ALL_DAYS_UP_TO ? r.days : r.days.filter((d) => d.missing + d.gone + d.changed > 0);
    if (shown.length) {
      const rows = shown.map((d) => [
        d.date + (d.whole ? '' : '*'),
        String(d.source),
        String(d.stored),
        String(d.missing),
        String(d.gone),
        String(d.changed),
        Object.entries(d.changedFields).map(([k, n]) => `${k} ×${n}`).join(', ') || '-',
        d.missing + d.gone + d.changed === 0 ? 'equal' : d.equal ? 'repaired' : refused.has(d.date) ? 'refused' : 'differs',
      ]);
      lines.push('', ...table(['day', 'source', 'stored', 'missing', 'gone', 'changed', 'fields changed', 'now'], rows).map((l) => `  ${l}`));
      if (shown.length < r.days.length) lines.push(`  (${r.days.length - shown.length} other day(s) equal)`);
      if (r.days.some((d) => !d.whole)) lines.push('  * the range covers part of the day');
    }
  }
  // The error is printed once, on stderr after the summary (as `error: …`), as for every run; --json's summary holds it.
  return lines.join('\n') + '\n';
}

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 || i >= 6 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(head), ...rows.map(line)];
}

/** The latest verification for `status`: when, what range, what it found and whether it was repaired. */
export function describeVerification(v: LastVerification | null): string {
  if (!v) return 'never (session-etl verify --from … --to … compares a range with the source)';
  const range = v.range ? `${v.range.from} – ${v.range.to}` : '(nothing to fetch)';
  const found =
    v.missing + v.gone + v.changed === 0
      ? 'the store equalled the source'
      : `${v.missing} missing, ${v.gone} no longer returned by the source, ${v.changed} changed` +
        (v.repaired || v.deleted ? ` (${v.repaired} repaired${v.deleted ? `, ${v.deleted} removed` : ''})` : '') +
        `; on ${v.differingDays.map((d) => `${d.date}${d.equalNow ? '' : ' (still differs)'}`).join(', ')}`;
  return `${v.at} (${v.outcome}): ${range}, ${v.days} day(s), ${v.source} sessions from the source; ${found}`;
}
