import { describe, expect, it } from 'vitest';
import { partialDays } from '../../src/time/partial-days.js';

const span = (from: string, to: string) => ({ from, to });

describe('partialDays', () => {
  it.each([
    ['a backfill to midnight: the next day holds only the sessions started at 00:00:00',
      [span('2026-01-01T00:00:00Z', '2026-01-08T00:00:00Z')],
      [{ date: '2026-01-08', covered: ['00:00:00 only'] }]],
    ['an export up to now - settle: its first and last days are partial',
      [span('2026-03-04T06:30:00Z', '2026-03-06T13:00:00Z')],
      [{ date: '2026-03-04', covered: ['06:30:00–24:00:00'] }, { date: '2026-03-06', covered: ['00:00:00–13:00:00'] }]],
    ['a hole inside a day',
      [span('2026-01-01T00:00:00Z', '2026-01-02T10:00:00Z'), span('2026-01-02T11:00:00Z', '2026-01-04T00:00:00Z')],
      [{ date: '2026-01-02', covered: ['00:00:00–10:00:00', '11:00:00–24:00:00'] }, { date: '2026-01-04', covered: ['00:00:00 only'] }]],
    ['nothing covered', [], []],
  ])('%s', (_what, coverage, expected) => {
    expect(partialDays(coverage)).toEqual(expected);
  });
});
