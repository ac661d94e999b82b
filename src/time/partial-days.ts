/**
 * UTC days that hold data but are only partly covered. The endpoint's end is inclusive, so a backfill
 * to midnight stores the sessions started then in the next day, a near-empty day in a BI tool. Only
 * each coverage interval's first and last day can be partial.
 */
const DAY = 86_400;

export interface PartialDay {
  /** YYYY-MM-DD (UTC), the partition's `date`. */
  date: string;
  /** What of the day is covered, as `HH:MM:SS–HH:MM:SS` spans (`HH:MM:SS only` for a single instant). */
  covered: string[];
}

export function partialDays(coverage: ReadonlyArray<{ from: string; to: string }>): PartialDay[] {
  const spans = coverage
    .map((c) => ({ start: Date.parse(c.from) / 1000, end: Date.parse(c.to) / 1000 }))
    .filter((s) => Number.isFinite(s.start) && Number.isFinite(s.end) && s.end > s.start);
  const candidates = new Set<number>();
  for (const s of spans) {
    candidates.add(Math.floor(s.start / DAY) * DAY);
    candidates.add(Math.floor(s.end / DAY) * DAY); // the day holding `end` itself (sessions started then are stored)
  }
  const out: PartialDay[] = [];
  for (const day of [...candidates].sort((a, b) => a - b)) {
    let seconds = 0;
    const covered: string[] = [];
    for (const s of spans) {
      const from = Math.max(s.start, day);
      const to = Math.min(s.end, day + DAY);
      if (from > to) continue; // `to` itself counts: the instant `end` is stored
      seconds += to - from;
      covered.push(from === to ? `${clock(from - day)} only` : `${clock(from - day)}–${clock(to - day)}`);
    }
    if (seconds < DAY) out.push({ date: new Date(day * 1000).toISOString().slice(0, 10), covered });
  }
  return out;
}

function clock(secondsIntoDay: number): string {
  const h = Math.floor(secondsIntoDay / 3600);
  const m = Math.floor((secondsIntoDay % 3600) / 60);
  const s = Math.floor(secondsIntoDay % 60);
  return [h, m, s].map((v) => String(v).padStart(2, '0')).join(':');
}
