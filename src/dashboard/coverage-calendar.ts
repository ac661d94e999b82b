/**
 * The coverage calendar: one cell per UTC day, in the words `session-etl status` uses: `covered`,
 * `partial` (time/partial-days.ts), `hole` (a gap between two exported ranges), `not-yet` (after
 * the checkpoint, or inside the range of the run going now). Each day carries its stored sessions
 * and, when something of it is missing, the command that fills it (none in a demo directory).
 */
import { partialDays } from '../time/partial-days.js';
import { dayArgs, rangeArgs, suggestedCommand, type CommandTarget } from '../util/suggested-command.js';

const DAY = 86_400;

export type DayState = 'covered' | 'partial' | 'hole' | 'not-yet';

export interface CalendarDay {
  date: string;
  state: DayState;
  sessions: number;
  command: string | null;
  /** A volume anomaly (docs/data-quality.md): its sessions, what it should hold, the command comparing it with the source. */
  anomaly?: { sessions: number; expected: number; command: string | null };
}

export interface CoverageGap {
  from: string;
  to: string;
  kind: 'hole' | 'after-checkpoint' | 'exporting';
  /** null while a run is exporting it, and in a demo directory. */
  command: string | null;
}

export interface CoverageCalendar {
  days: CalendarDay[];
  gaps: CoverageGap[];
}

export interface CalendarOptions {
  target?: CommandTarget;
  /** A demo directory: nothing can fill its gaps once the demo's emulator is gone. */
  noCommands?: boolean;
  /** The range of the run going now (ISO instants): what it has not covered yet is `not-yet`. */
  running?: { from: string; to: string } | null;
  anomalies?: ReadonlyArray<{ date: string; sessions: number; expected: number }>;
  /** Backfills that did not finish, newest first: a gap inside one is filled by running it again (as `status` says). */
  unfinished?: ReadonlyArray<{ from: string; to: string }>;
}

interface Span {
  start: number;
  end: number;
}

/** `coverage` in ISO instants, `sessionsPerDay` by `YYYY-MM-DD`; today is the day of `nowMs`. */
export function coverageCalendar(
  coverage: ReadonlyArray<{ from: string; to: string }>,
  sessionsPerDay: ReadonlyMap<string, number>,
  nowMs: number,
  opts: CalendarOptions = {},
): CoverageCalendar {
  const spans = coverage.map(spanOf).filter((s) => s !== null).sort((a, b) => a.start - b.start);
  const now = Math.floor(nowMs / 1000);
  const running = opts.running ? spanOf(opts.running) : null;
  if (!spans.length && !running) return { days: [], gaps: [] };

  const gaps: Array<Span & { kind: CoverageGap['kind'] }> = [];
  let reach = spans[0]?.end ?? running!.start;
  for (const s of spans.slice(1)) {
    if (s.start > reach) gaps.push({ start: reach, end: s.start, kind: overlaps(running, reach, s.start) ? 'exporting' : 'hole' });
    reach = Math.max(reach, s.end);
  }
  if (now > reach) gaps.push({ start: reach, end: now, kind: 'after-checkpoint' });
  // Backfills begun and not finished whose range is not wholly covered: their gaps are resumed, as `status` says.
  const unfinished = (opts.unfinished ?? []).map(spanOf).filter((u) => u !== null && !wholly(spans, u)) as Span[];
  const resumed = (g: Span) => unfinished.find((u) => overlaps(u, g.start, g.end) && !wholly(spans, { start: Math.max(u.start, g.start), end: Math.min(u.end, g.end) }));
  /** The command for `g`, or for the part `part` of it (a day): an unfinished backfill there is resumed first. */
  const commandOf = (g: Span & { kind: CoverageGap['kind'] }, part: Span = g): string | null => {
    if (opts.noCommands || g.kind === 'exporting') return null;
    const u = resumed(part);
    if (u) return suggestedCommand('backfill', rangeArgs(u), opts.target);
    return g.kind === 'hole' ? suggestedCommand('backfill', rangeArgs(g), opts.target) : suggestedCommand('export', [], opts.target);
  };

  const partial = new Set(partialDays(coverage).map((d) => d.date));
  const days: CalendarDay[] = [];
  const first = Math.floor(Math.min(spans[0]?.start ?? Infinity, running?.start ?? Infinity) / DAY) * DAY;
  const last = Math.floor(now / DAY) * DAY;
  for (let day = first; day <= last; day += DAY) {
    const dayEnd = day + DAY;
    const date = new Date(day * 1000).toISOString().slice(0, 10);
    let covered = 0;
    for (const s of spans) covered += Math.max(0, Math.min(s.end, dayEnd) - Math.max(s.start, day));
    const hole = gaps.find((g) => g.kind === 'hole' && g.start < dayEnd && g.end > day);
    const state: DayState = partial.has(date)
      ? 'partial'
      : covered >= DAY
        ? 'covered'
        : hole && !overlaps(running, day, dayEnd)
          ? 'hole'
          : 'not-yet';
    const gap = state === 'covered' ? undefined : gaps.find((g) => g.start < dayEnd && g.end > day);
    const anomaly = opts.anomalies?.find((a) => a.date === date);
    days.push({
      date,
      state,
      sessions: sessionsPerDay.get(date) ?? anomaly?.sessions ?? 0,
      // A day inside an unfinished backfill: resumed by it; any other day of a gap: the gap's command.
      command: gap ? commandOf(gap, { start: day, end: dayEnd }) : null,
      ...(anomaly
        ? { anomaly: { sessions: anomaly.sessions, expected: anomaly.expected, command: opts.noCommands ? null : suggestedCommand('verify', dayArgs(date), opts.target) } }
        : {}),
    });
  }
  return {
    days,
    gaps: gaps.map((g) => ({ from: iso(g.start), to: iso(g.end), kind: g.kind, command: commandOf(g) })),
  };
}

/** A range of ISO instants in epoch seconds; null when it is not one. */
function spanOf(r: { from: string; to: string }): Span | null {
  const s = { start: Date.parse(r.from) / 1000, end: Date.parse(r.to) / 1000 };
  return Number.isFinite(s.start) && Number.isFinite(s.end) && s.end > s.start ? s : null;
}

/** Whether the spans (sorted, merged or not) cover all of `range`. */
function wholly(spans: Span[], range: Span): boolean {
  let reach = range.start;
  for (const s of spans) {
    if (s.start > reach) break;
    reach = Math.max(reach, s.end);
    if (reach >= range.end) return true;
  }
  return reach >= range.end;
}

function overlaps(range: Span | null, start: number, end: number): boolean {
  return range !== null && range.start < end && range.end > start;
}

function iso(t: number): string {
  return new Date(t * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * The ranges of backfills that ended without succeeding (failed, interrupted, died), newest first,
 * but not the run going now nor one a later backfill of the same range completed.
 */
export function unfinishedBackfills(runs: ReadonlyArray<Record<string, unknown>>, live: string | null): Array<{ from: string; to: string }> {
  const out: Array<{ from: string; to: string }> = [];
  const done = new Set<string>();
  for (const r of runs) {
    if (r.kind !== 'backfill' || !r.range_from || !r.range_to || r.run_id === live) continue;
    const key = `${String(r.range_from)}|${String(r.range_to)}`;
    // A row still marked running that is not the live run died: unfinished too.
    if (r.outcome === 'succeeded' || r.outcome === 'nothing-to-do') done.add(key);
    else if (!done.has(key)) out.push({ from: String(r.range_from), to: String(r.range_to) });
  }
  return out;
}
