import { describe, expect, it } from 'vitest';
import { chartDays } from '../../src/dashboard/chart-days.js';
import type { CalendarDay } from '../../src/dashboard/coverage-calendar.js';

const cal = (states: Array<[string, CalendarDay['state']]>): CalendarDay[] => states.map(([date, state]) => ({ date, state, sessions: 0, command: null }));

describe('chartDays', () => {
  it('every day of the range; a day not exported has no value (a gap in the line), an exported day without sessions has 0', () => {
    const days = chartDays(
      [
        { date: '2026-03-01', sessions: 40, medianDurationSeconds: 600 },
        { date: '2026-03-04', sessions: 1, medianDurationSeconds: 2880 },
      ],
      cal([['2026-03-01', 'covered'], ['2026-03-02', 'hole'], ['2026-03-03', 'covered'], ['2026-03-04', 'partial'], ['2026-03-05', 'not-yet']]),
      '2026-02-28',
      '2026-03-05',
    );
    expect(days).toEqual([
      { date: '2026-02-28', sessions: null, medianDurationSeconds: null, state: 'not-yet' },
      { date: '2026-03-01', sessions: 40, medianDurationSeconds: 600, state: 'covered' },
      { date: '2026-03-02', sessions: null, medianDurationSeconds: null, state: 'hole' },
      { date: '2026-03-03', sessions: 0, medianDurationSeconds: null, state: 'covered' },
      { date: '2026-03-04', sessions: 1, medianDurationSeconds: 2880, state: 'partial' },
      { date: '2026-03-05', sessions: null, medianDurationSeconds: null, state: 'not-yet' },
    ]);
  });
});
