/**
 * The per-day charts' points: every day of the range, with the day's state in the calendar's words
 * (coverage-calendar.ts), so that the page draws no line across a hole (a day not exported has no
 * value, not zero) and tells partial days from whole ones (a partial day's few sessions say nothing
 * of the day's median duration).
 */
import type { CalendarDay, DayState } from './coverage-calendar.js';

export interface ChartDay {
  date: string;
  /** Null for a day not exported (a hole, or not yet). */
  sessions: number | null;
  medianDurationSeconds: number | null;
  state: DayState;
}

const DAY_MS = 86_400_000;

/** `counted`: the days with sessions; `calendar`: from the first covered day to today; `from`..`to` both included. */
export function chartDays(
  counted: ReadonlyArray<{ date: string; sessions: number; medianDurationSeconds: number | null }>,
  calendar: readonly CalendarDay[],
  from: string,
  to: string,
): ChartDay[] {
  const byDate = new Map(counted.map((d) => [d.date, d]));
  const stateOf = new Map(calendar.map((d) => [d.date, d.state]));
  const out: ChartDay[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY_MS) {
    const date = new Date(t).toISOString().slice(0, 10);
    const row = byDate.get(date);
    // A day outside the calendar is before the first export or after today: not exported (yet).
    const state = stateOf.get(date) ?? (row ? 'covered' : 'not-yet');
    const exported = state === 'covered' || state === 'partial';
    out.push({ date, sessions: row?.sessions ?? (exported ? 0 : null), medianDurationSeconds: row?.medianDurationSeconds ?? null, state });
  }
  return out;
}
