/**
 * The coverage calendar: one cell per UTC day from the first covered day to today, each covered
 * (the whole day is in the coverage), partial (part of it) or hole (none of it), with the day's
 * stored sessions and, for a day that is not covered whole, the command that fills the gap.
 */
import { quoteArg } from './shell-quote.js';

const DAY = 86_400;

export type DayState = 'covered' | 'partial' | 'hole';

export interface CalendarDay {
  date: string;
  state: DayState;
  sessions: number;
  /** The command that fills what of this day is missing; null for a covered day. */
  command: string | null;
  /**
   * A volume anomaly (README "Volume anomalies"): the day holds far fewer sessions than its weekday
   * usually does: its sessions then, what it should hold, and the command comparing it with the source.
   * Absent on other days.
   */
  anomaly?: { sessions: number; expected: number; command: string };
}

export interface CoverageGap {
  from: string;
  to: string;
  /** Between two covered intervals (a hole), or after the checkpoint (not exported yet). */
  kind: 'hole' | 'after-checkpoint';
  command: string;
}

export interface CoverageCalendar {
  days: CalendarDay[];
  gaps: CoverageGap[];
}

interface Span {
  start: number;
  end: number;
}

/**
 * @param coverage the snapshot's coverage intervals (ISO instants)
 * @param sessionsPerDay stored sessions per `YYYY-MM-DD`
 * @param nowMs today is the day of this instant
 * @param dataDirArg `--data-dir …` to add to the commands (empty for the default)
 */
export function coverageCalendar(
  coverage: ReadonlyArray<{ from: string; to: string }>,
  sessionsPerDay: ReadonlyMap<string, number>,
  nowMs: number,
  dataDirArg = '',
  anomalies: ReadonlyArray<{ date: string; sessions: number; expected: number }> = [],
): CoverageCalendar {
  const spans: Span[] = coverage
    .map((c) => ({ start: Date.parse(c.from) / 1000, end: Date.parse(c.to) / 1000 }))
    .filter((s) => Number.isFinite(s.start) && Number.isFinite(s.end) && s.end > s.start)
    .sort((a, b) => a.start - b.start);
  const now = Math.floor(nowMs / 1000);
  if (!spans.length) return { days: [], gaps: [] };

  const gaps: Array<Span & { kind: CoverageGap['kind'] }> = [];
  let reach = spans[0]!.end;
  for (const s of spans.slice(1)) {
    if (s.start > reach) gaps.push({ start: reach, end: s.start, kind: 'hole' });
    reach = Math.max(reach, s.end);
  }
  if (now > reach) gaps.push({ start: reach, end: now, kind: 'after-checkpoint' });
  const commandOf = (g: Span & { kind: CoverageGap['kind'] }): string =>
    g.kind === 'hole'
      ? `session-etl backfill --from ${instantArg(g.start)} --to ${instantArg(g.end)}${dataDirArg}`
      : `session-etl export${dataDirArg}`;

  const days: CalendarDay[] = [];
  const first = Math.floor(spans[0]!.start / DAY) * DAY;
  const last = Math.floor(now / DAY) * DAY;
  for (let day = first; day <= last; day += DAY) {
    const dayEnd = day + DAY;
    let covered = 0;
    for (const s of spans) covered += Math.max(0, Math.min(s.end, dayEnd) - Math.max(s.start, day));
    const state: DayState = covered >= DAY ? 'covered' : covered > 0 ? 'partial' : 'hole';
    const gap = state === 'covered' ? undefined : gaps.find((g) => g.start < dayEnd && g.end > day);
    const date = dateOf(day);
    const anomaly = anomalies.find((a) => a.date === date);
    days.push({
      date,
      state,
      sessions: sessionsPerDay.get(date) ?? anomaly?.sessions ?? 0,
      command: gap ? commandOf(gap) : null,
      ...(anomaly
        ? { anomaly: { sessions: anomaly.sessions, expected: anomaly.expected, command: `session-etl verify --from ${date} --to ${dateOf(day + DAY)}${dataDirArg}` } }
        : {}),
    });
  }
  return {
    days,
    gaps: gaps.map((g) => ({ from: iso(g.start), to: iso(g.end), kind: g.kind, command: commandOf(g) })),
  };
}

/** `--data-dir DIR` (with a leading space), shell-quoted, or '' for none. */
export function dataDirArgument(dataDir: string | undefined): string {
  return dataDir ? ` --data-dir ${quoteArg(dataDir)}` : '';
}

/** A midnight as its date (what backfill reads as that midnight), any other instant in full. */
function instantArg(t: number): string {
  return t % DAY === 0 ? dateOf(t) : iso(t);
}

function dateOf(t: number): string {
  return new Date(t * 1000).toISOString().slice(0, 10);
}

function iso(t: number): string {
  return new Date(t * 1000).toISOString().replace('.000Z', 'Z');
}
