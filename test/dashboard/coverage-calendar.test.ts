import { describe, expect, it } from 'vitest';
import { coverageCalendar, dataDirArgument } from '../../src/dashboard/coverage-calendar.js';

const at = (s: string) => `${s}Z`;
const NOW = Date.parse('2026-03-06T12:00:00Z');

describe('coverageCalendar', () => {
  it.each([
    ['a whole day is covered', [['2026-03-01T00:00:00', '2026-03-02T00:00:00']], '2026-03-01', 'covered'],
    ['part of a day is partial', [['2026-03-01T06:00:00', '2026-03-02T00:00:00']], '2026-03-01', 'partial'],
    ['a day between two intervals is a hole', [['2026-03-01T00:00:00', '2026-03-02T00:00:00'], ['2026-03-03T00:00:00', '2026-03-04T00:00:00']], '2026-03-02', 'hole'],
    ['two intervals covering a day between them cover it', [['2026-03-01T00:00:00', '2026-03-01T12:00:00'], ['2026-03-01T12:00:00', '2026-03-02T00:00:00']], '2026-03-01', 'covered'],
    ['today, covered up to now minus the settle time, is partial', [['2026-03-01T00:00:00', '2026-03-06T11:50:00']], '2026-03-06', 'partial'],
  ])('%s', (_what, spans, date, state) => {
    const cal = coverageCalendar(spans.map(([from, to]) => ({ from: at(from!), to: at(to!) })), new Map(), NOW);
    expect(cal.days.find((d) => d.date === date)?.state).toBe(state);
  });

  it('one cell per day from the first covered day to today, with the day counts and each gap\'s command', () => {
    const cal = coverageCalendar(
      [
        { from: at('2026-03-01T00:00:00'), to: at('2026-03-02T00:00:00') },
        { from: at('2026-03-03T06:00:00'), to: at('2026-03-04T00:00:00') },
      ],
      new Map([['2026-03-01', 40], ['2026-03-03', 7]]),
      NOW,
      dataDirArgument('/srv/my data'),
    );
    expect(cal.days.map((d) => [d.date, d.state, d.sessions])).toEqual([
      ['2026-03-01', 'covered', 40],
      ['2026-03-02', 'hole', 0],
      ['2026-03-03', 'partial', 7],
      ['2026-03-04', 'hole', 0],
      ['2026-03-05', 'hole', 0],
      ['2026-03-06', 'hole', 0],
    ]);
    const fill = "session-etl backfill --from 2026-03-02 --to 2026-03-03T06:00:00Z --data-dir '/srv/my data'";
    expect(cal.days[1]!.command).toBe(fill);
    expect(cal.days[2]!.command).toBe(fill);
    expect(cal.days[0]!.command).toBeNull();
    expect(cal.days[4]!.command).toBe("session-etl export --data-dir '/srv/my data'");
    expect(cal.gaps).toEqual([
      { from: '2026-03-02T00:00:00Z', to: '2026-03-03T06:00:00Z', kind: 'hole', command: fill },
      { from: '2026-03-04T00:00:00Z', to: '2026-03-06T12:00:00Z', kind: 'after-checkpoint', command: "session-etl export --data-dir '/srv/my data'" },
    ]);
  });

  it('nothing covered: no days', () => {
    expect(coverageCalendar([], new Map(), NOW)).toEqual({ days: [], gaps: [] });
  });
});
