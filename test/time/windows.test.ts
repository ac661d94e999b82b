import { describe, expect, it } from 'vitest';
import { alignDown, bisect, cutWindows, parseDuration, parseInstant } from '../../src/time/windows.js';
import { checkpointOf, holes, mergeIntervals, subtractIntervals } from '../../src/time/intervals.js';
import { D } from '../helpers/time.js';

const JAN1 = 1767225600; // 2026-01-01T00:00:00Z

describe('parseInstant', () => {
  it.each([
    ['2026-01-01', JAN1],
    ['2026-01-01T00:00:00Z', JAN1],
    ['2026-01-01T02:00:00+02:00', JAN1],
    ['2025-12-31T19:00:00-05:00', JAN1],
    ['2026-01-01T00:00Z', JAN1],
    ['1767225600', JAN1],
    [' 2026-01-02 ', JAN1 + D],
  ])('%s → %i', (text, expected) => {
    expect(parseInstant(text)).toBe(expected);
  });

  it.each([
    ['2026-02-30', /not a real calendar date/],
    ['2026-01-01T08:00:00', /no UTC offset/],
    ['yesterday', /is not a date/],
    ['', /is not a date/],
    ['2026-13-01', /not a real calendar date/],
  ])('rejects %j', (text, msg) => {
    expect(() => parseInstant(text, '--from')).toThrow(msg);
  });
});

describe('parseDuration', () => {
  it.each([
    ['15m', 900],
    ['6h', 21_600],
    ['1d', D],
    ['7d', 7 * D],
    ['90s', 90],
    ['2w', 14 * D],
  ])('%s → %i', (t, n) => expect(parseDuration(t)).toBe(n));
  it.each(['0m', '-1d', '1y', 'abc', '1.5h'])('rejects %j', (t) => expect(() => parseDuration(t)).toThrow());
});

describe('cutWindows', () => {
  it('cuts a range into UTC days, half-open and contiguous', () => {
    const ws = cutWindows(JAN1, JAN1 + 3 * D, D);
    expect(ws).toEqual([
      { start: JAN1, end: JAN1 + D },
      { start: JAN1 + D, end: JAN1 + 2 * D },
      { start: JAN1 + 2 * D, end: JAN1 + 3 * D },
    ]);
  });
  it('aligns inner boundaries even when the range does not start on one', () => {
    const ws = cutWindows(JAN1 + 3600, JAN1 + D + 7200, D);
    expect(ws).toEqual([
      { start: JAN1 + 3600, end: JAN1 + D },
      { start: JAN1 + D, end: JAN1 + D + 7200 },
    ]);
  });
  it('aligns weeks to Monday 00:00 UTC', () => {
    // 2026-01-01 is a Thursday; the next Monday is 2026-01-05.
    const ws = cutWindows(JAN1, JAN1 + 14 * D, 7 * D);
    expect(ws[0]).toEqual({ start: JAN1, end: JAN1 + 4 * D });
    expect(new Date(ws[1]!.start * 1000).getUTCDay()).toBe(1);
    expect(alignDown(JAN1 + 4 * D + 5, 7 * D)).toBe(JAN1 + 4 * D);
  });
  it('covers the range exactly once for any chunk', () => {
    for (const chunk of [900, 21_600, D, 7 * D]) {
      const ws = cutWindows(JAN1 + 123, JAN1 + 40 * D + 77, chunk);
      expect(ws[0]!.start).toBe(JAN1 + 123);
      expect(ws.at(-1)!.end).toBe(JAN1 + 40 * D + 77);
      for (let i = 1; i < ws.length; i++) expect(ws[i]!.start).toBe(ws[i - 1]!.end);
    }
  });
});

describe('bisect', () => {
  it('splits at the midpoint and stops at the minimum', () => {
    expect(bisect({ start: 0, end: 120 }, 60)).toEqual([
      { start: 0, end: 60 },
      { start: 60, end: 120 },
    ]);
    expect(bisect({ start: 0, end: 119 }, 60)).toBeUndefined();
  });
});

describe('intervals', () => {
  it('merges overlapping and adjacent windows', () => {
    expect(mergeIntervals([{ start: 5, end: 10 }, { start: 0, end: 5 }, { start: 20, end: 30 }, { start: 8, end: 12 }])).toEqual([
      { start: 0, end: 12 },
      { start: 20, end: 30 },
    ]);
  });
  it('finds what is left to fetch and the holes', () => {
    const covered = mergeIntervals([{ start: 10, end: 20 }, { start: 30, end: 40 }]);
    expect(subtractIntervals({ start: 0, end: 50 }, covered)).toEqual([
      { start: 0, end: 10 },
      { start: 20, end: 30 },
      { start: 40, end: 50 },
    ]);
    expect(holes(covered)).toEqual([{ start: 20, end: 30 }]);
    expect(checkpointOf(covered)).toBe(20);
    expect(checkpointOf([])).toBeUndefined();
  });
});
