/**
 * Interval arithmetic over half-open `[start, end)` windows in epoch seconds: merging the coverage
 * map, finding holes, and the checkpoint (end of the contiguous completed prefix).
 */
import type { Window } from './windows.js';

/** Sorted, non-overlapping, non-adjacent union of `ws`. */
export function mergeIntervals(ws: readonly Window[]): Window[] {
  const sorted = ws.filter((w) => w.end > w.start).sort((a, b) => a.start - b.start || a.end - b.end);
  const out: Window[] = [];
  for (const w of sorted) {
    const last = out[out.length - 1];
    if (last && w.start <= last.end) {
      if (w.end > last.end) out[out.length - 1] = { start: last.start, end: w.end };
    } else out.push({ start: w.start, end: w.end });
  }
  return out;
}

/** Parts of `range` not covered by `covered` (which must be merged). */
export function subtractIntervals(range: Window, covered: readonly Window[]): Window[] {
  const out: Window[] = [];
  let cursor = range.start;
  for (const c of covered) {
    if (c.end <= cursor) continue;
    if (c.start >= range.end) break;
    if (c.start > cursor) out.push({ start: cursor, end: Math.min(c.start, range.end) });
    cursor = Math.max(cursor, c.end);
    if (cursor >= range.end) break;
  }
  if (cursor < range.end) out.push({ start: cursor, end: range.end });
  return out;
}

/** Holes between the first covered instant and the last one. */
export function holes(covered: readonly Window[]): Window[] {
  const merged = mergeIntervals(covered);
  const out: Window[] = [];
  for (let i = 1; i < merged.length; i++) out.push({ start: merged[i - 1]!.end, end: merged[i]!.start });
  return out;
}

/** The incremental checkpoint: end of the first merged coverage interval, or undefined when nothing is covered. */
export function checkpointOf(covered: readonly Window[]): number | undefined {
  return mergeIntervals(covered)[0]?.end;
}
