/**
 * Volume anomalies: finished days with far fewer sessions than their weekday usually has, which an
 * endpoint answering 200 without part of a day leaves looking complete in the coverage. The rule is
 * docs/data-quality.md "Volume anomalies". Pure: the counts, coverage and confirmed days come from the caller.
 */
import { mergeIntervals } from '../time/intervals.js';
import type { Window } from '../time/windows.js';
import { z } from 'zod';

/** A finished day with far fewer sessions than its weekday usually has. */
export const VolumeAnomalySchema = z.object({
  /** The UTC day, YYYY-MM-DD. */
  date: z.string(),
  /** Sessions stored for it. */
  sessions: z.number(),
  /** The median of the same weekday over the previous `weeks` weeks (rounded). */
  expected: z.number(),
});
export type VolumeAnomaly = z.infer<typeof VolumeAnomalySchema>;

const DAY = 86_400;

export interface VolumeRule {
  /** A day below this fraction of its expected count is an anomaly; 0 turns the check off. */
  threshold: number;
  /** How many previous same weekdays make the expectation (their median); all must be covered whole. */
  weeks: number;
  /** Days whose expected count is below this are not judged. */
  minSessions: number;
}

/** The configuration's defaults (config/defaults.ts states the same). */
export const DEFAULT_VOLUME_RULE: VolumeRule = { threshold: 0.5, weeks: 4, minSessions: 20 };

/** The anomalies among the days `coverage` covers whole, oldest first; `confirmed`: days verify found equal, with their count then. */
export function findVolumeAnomalies(
  counts: ReadonlyMap<string, number>,
  coverage: readonly Window[],
  rule: VolumeRule,
  confirmed: ReadonlyMap<string, number> = new Map(),
): VolumeAnomaly[] {
  if (!(rule.threshold > 0) || rule.weeks < 1) return [];
  const whole = wholeDays(coverage);
  const out: VolumeAnomaly[] = [];
  for (const day of whole) {
    const history: number[] = [];
    for (let k = 1; k <= rule.weeks; k++) {
      const before = day - 7 * k * DAY;
      if (!whole.has(before)) break;
      history.push(counts.get(dateOf(before)) ?? 0);
    }
    if (history.length < rule.weeks) continue;
    const expected = median(history);
    if (expected < rule.minSessions || expected === 0) continue;
    const date = dateOf(day);
    const sessions = counts.get(date) ?? 0;
    if (sessions >= rule.threshold * expected) continue;
    if (confirmed.get(date) === sessions) continue;
    out.push({ date, sessions, expected: Math.round(expected) });
  }
  return out;
}

/** The starts (epoch seconds) of the UTC days lying wholly inside the coverage, ascending. */
export function wholeDays(coverage: readonly Window[]): Set<number> {
  const days = new Set<number>();
  for (const w of mergeIntervals(coverage)) {
    for (let d = Math.ceil(w.start / DAY) * DAY; d + DAY <= w.end; d += DAY) days.add(d);
  }
  return days;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function dateOf(t: number): string {
  return new Date(t * 1000).toISOString().slice(0, 10);
}

/** One line for a person: "2026-03-04: 12 sessions, expected about 250". */
export function describeAnomaly(a: VolumeAnomaly): string {
  return `${a.date}: ${a.sessions} sessions, expected about ${a.expected}`;
}
