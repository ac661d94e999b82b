/**
 * Time windows: parsing instants and durations, and cutting `[from, to)` into UTC-aligned chunks.
 * All instants are epoch seconds (integers); every range is half-open.
 */
import { addSeconds, isValid, parseISO } from 'date-fns';

export interface Window {
  /** Inclusive start, epoch seconds. */
  readonly start: number;
  /** Exclusive end, epoch seconds. */
  readonly end: number;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATETIME_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;
const EPOCH = /^\d{1,12}$/;

/** Parses `2026-01-01` (UTC midnight), an ISO datetime with an offset, or epoch seconds; no offset is refused, not guessed. */
export function parseInstant(text: string, what = 'time'): number {
  const s = text.trim();
  if (EPOCH.test(s)) return Number(s);
  if (DATE_ONLY.test(s)) {
    const d = parseISO(`${s}T00:00:00Z`);
    if (isValid(d) && d.toISOString().slice(0, 10) === s) return d.getTime() / 1000;
    throw new InstantParseError(what, text, 'is not a real calendar date');
  }
  if (DATETIME_WITH_OFFSET.test(s)) {
    const d = parseISO(s);
    if (isValid(d)) return Math.floor(d.getTime() / 1000);
    throw new InstantParseError(what, text, 'is not a valid date and time');
  }
  if (/^\d{4}-\d{2}-\d{2}T/.test(s)) {
    throw new InstantParseError(what, text, 'has no UTC offset: add Z or +HH:MM (for example 2026-01-01T08:00:00Z)');
  }
  throw new InstantParseError(what, text, 'is not a date (2026-01-01), an ISO datetime with offset (2026-01-01T08:00:00Z) or epoch seconds');
}

export class InstantParseError extends RangeError {
  override readonly name = 'InstantParseError';
  constructor(what: string, text: string, problem: string) {
    super(`${what} ${JSON.stringify(text)} ${problem}`);
  }
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** Parses `90s`, `15m`, `6h`, `1d`, `7d`, `2w` into seconds (a positive integer). */
export function parseDuration(text: string, what = 'duration'): number {
  const m = /^\s*(\d+)\s*([smhdw])\s*$/i.exec(text);
  if (!m) throw new RangeError(`${what} ${JSON.stringify(text)} is not a duration such as 90s, 15m, 6h, 1d or 7d`);
  const n = Number(m[1]) * UNIT_SECONDS[m[2]!.toLowerCase()]!;
  if (n <= 0) throw new RangeError(`${what} ${JSON.stringify(text)} must be longer than zero`);
  return n;
}

/** Formats a duration in seconds the way parseDuration reads it (largest exact unit). */
export function formatDuration(seconds: number): string {
  for (const u of ['w', 'd', 'h', 'm'] as const) {
    const k = UNIT_SECONDS[u]!;
    if (seconds % k === 0) return `${seconds / k}${u}`;
  }
  return `${seconds}s`;
}

/** 1970-01-05 was a Monday: weeks are aligned to Monday 00:00 UTC. */
const WEEK_ORIGIN = 4 * 86_400;

/** The aligned boundary at or before `t` for chunks of `chunk` seconds (UTC; weeks start on Monday). */
export function alignDown(t: number, chunk: number): number {
  const origin = chunk % 604_800 === 0 ? WEEK_ORIGIN : 0;
  return Math.floor((t - origin) / chunk) * chunk + origin;
}

/** Cuts `[from, to)` into chunks oldest first, inner boundaries UTC-aligned multiples of `chunk` (the same whatever the range). */
export function cutWindows(from: number, to: number, chunk: number): Window[] {
  if (!Number.isInteger(from) || !Number.isInteger(to)) throw new RangeError('window bounds must be whole seconds');
  if (!(chunk > 0)) throw new RangeError('chunk must be longer than zero');
  const out: Window[] = [];
  let start = from;
  while (start < to) {
    const next = Math.min(to, alignDown(start, chunk) + chunk);
    out.push({ start, end: next });
    start = next;
  }
  return out;
}

/** How many windows cutWindows(from, to, chunk) returns, computed without building them. */
export function countWindows(from: number, to: number, chunk: number): number {
  if (!(chunk > 0)) throw new RangeError('chunk must be longer than zero');
  if (from >= to) return 0;
  const firstBoundary = alignDown(from, chunk) + chunk;
  return firstBoundary >= to ? 1 : 1 + Math.ceil((to - firstBoundary) / chunk);
}

/** Most windows one run plans: each is held in memory, and decades cut into seconds would exhaust it (docs/configuration.md). */
export const MAX_PLANNED_WINDOWS = 1_000_000;

/** Refuses a plan of more than MAX_PLANNED_WINDOWS windows over these ranges (RangeError: exit 2). */
export function checkPlanSize(ranges: readonly Window[], chunk: number): number {
  let n = 0;
  for (const r of ranges) n += countWindows(r.start, r.end, chunk);
  if (n > MAX_PLANNED_WINDOWS) {
    const span = ranges.reduce((s, r) => s + (r.end - r.start), 0);
    const fits = formatDuration(smallestFittingChunk(span));
    throw new RangeError(
      `the range cut into ${formatDuration(chunk)} chunks makes ${n.toLocaleString('en-US')} windows, more than the ` +
        `${MAX_PLANNED_WINDOWS.toLocaleString('en-US')} one run can plan: give a bigger --chunk (at least ${fits} for this range) or a shorter range`,
    );
  }
  return n;
}

/** The refusal (exit 2) of a chunk shorter than the smallest window bisection makes: such windows could never be split. */
export function chunkBelowMinChunk(chunkSeconds: number, minChunkSeconds: number): string {
  return (
    `--chunk ${formatDuration(chunkSeconds)} is shorter than --min-chunk ${formatDuration(minChunkSeconds)} (the smallest window ` +
    `bisection makes): give a --chunk of at least ${formatDuration(minChunkSeconds)}, or a smaller --min-chunk`
  );
}

/** The smallest chunk in whole minutes, hours or days that cuts `span` seconds into few enough windows. */
function smallestFittingChunk(span: number): number {
  const need = Math.ceil(span / (MAX_PLANNED_WINDOWS - 2));
  const unit = need <= 3600 ? 60 : need <= 86_400 ? 3600 : 86_400;
  return Math.ceil(need / unit) * unit;
}

/** Splits a window in two at its (whole-second) midpoint; undefined when it is too short to split. */
export function bisect(w: Window, minSeconds: number): [Window, Window] | undefined {
  const span = w.end - w.start;
  if (span < 2 * minSeconds || span < 2) return undefined;
  const mid = w.start + Math.floor(span / 2);
  return [
    { start: w.start, end: mid },
    { start: mid, end: w.end },
  ];
}

export function isoOf(t: number): string {
  return addSeconds(new Date(0), t).toISOString().replace('.000Z', 'Z');
}

export function describeWindow(w: Window): string {
  return `${isoOf(w.start)}–${isoOf(w.end)}`;
}
