import { describe, expect, it } from 'vitest';
import { coverageCalendar } from '../../src/dashboard/coverage-calendar.js';
import { holes } from '../../src/time/intervals.js';
import { partialDays } from '../../src/time/partial-days.js';

const at = (s: string) => `${s}Z`;
const NOW = Date.parse('2026-03-06T12:00:00Z');
const spansOf = (spans: string[][]) => spans.map(([from, to]) => ({ from: at(from!), to: at(to!) }));

describe('coverageCalendar', () => {
  it.each([
    ['a whole day is covered', [['2026-03-01T00:00:00', '2026-03-02T00:00:00']], '2026-03-01', 'covered'],
    ['part of a day is partial', [['2026-03-01T06:00:00', '2026-03-02T00:00:00']], '2026-03-01', 'partial'],
    ['the day an interval ends at its midnight holds that instant\'s sessions: a partial day, as status says', [['2026-03-01T00:00:00', '2026-03-02T00:00:00'], ['2026-03-03T00:00:00', '2026-03-04T00:00:00']], '2026-03-02', 'partial'],
    ['a whole day inside a hole is a hole', [['2026-03-01T00:00:00', '2026-03-02T06:00:00'], ['2026-03-04T00:00:00', '2026-03-05T00:00:00']], '2026-03-03', 'hole'],
    ['two intervals covering a day between them cover it', [['2026-03-01T00:00:00', '2026-03-01T12:00:00'], ['2026-03-01T12:00:00', '2026-03-02T00:00:00']], '2026-03-01', 'covered'],
    ['today, covered up to now minus the settle time, is partial', [['2026-03-01T00:00:00', '2026-03-06T11:50:00']], '2026-03-06', 'partial'],
    ['a day after the last exported instant is not exported yet, not a hole', [['2026-03-01T00:00:00', '2026-03-03T06:00:00']], '2026-03-05', 'not-yet'],
  ])('%s', (_what, spans, date, state) => {
    const cal = coverageCalendar(spansOf(spans), new Map(), NOW);
    expect(cal.days.find((d) => d.date === date)?.state).toBe(state);
  });

  it.each([
    ['one range ending mid-day', [['2026-02-20T00:00:00', '2026-02-24T13:00:00']]],
    ['a hole of whole days', [['2026-02-20T00:00:00', '2026-02-22T00:00:00'], ['2026-02-25T00:00:00', '2026-03-01T00:00:00']]],
    ['a hole inside a day', [['2026-02-20T00:00:00', '2026-02-22T03:00:00'], ['2026-02-22T09:00:00', '2026-03-06T11:50:00']]],
    ['ranges starting and ending mid-day', [['2026-02-20T07:00:00', '2026-02-23T18:00:00'], ['2026-02-26T05:00:00', '2026-03-02T00:00:00']]],
  ])('the same words as `status`: its partial days are the partial cells, its holes hold the hole cells (%s)', (_what, spans) => {
    const coverage = spansOf(spans);
    const cal = coverageCalendar(coverage, new Map(), NOW);
    expect(cal.days.filter((d) => d.state === 'partial').map((d) => d.date)).toEqual(partialDays(coverage).map((d) => d.date));
    const statusHoles = holes(coverage.map((c) => ({ start: Date.parse(c.from) / 1000, end: Date.parse(c.to) / 1000 })));
    for (const d of cal.days) {
      const t = Date.parse(`${d.date}T00:00:00Z`) / 1000;
      const inHole = statusHoles.some((h) => h.start < t + 86_400 && h.end > t);
      if (d.state === 'hole') expect(inHole, d.date).toBe(true);
      if (inHole && d.state !== 'partial') expect(d.state, d.date).toBe('hole');
    }
    expect(cal.gaps.filter((g) => g.kind === 'hole').map((g) => [Date.parse(g.from) / 1000, Date.parse(g.to) / 1000])).toEqual(statusHoles.map((h) => [h.start, h.end]));
  });

  it('one cell per day from the first covered day to today, with the day counts and each gap\'s command', () => {
    const cal = coverageCalendar(
      spansOf([
        ['2026-03-01T00:00:00', '2026-03-02T00:00:00'],
        ['2026-03-03T06:00:00', '2026-03-04T00:00:00'],
      ]),
      new Map([['2026-03-01', 40], ['2026-03-03', 7]]),
      NOW,
      { target: { dataDir: '/srv/my data', config: null } },
    );
    expect(cal.days.map((d) => [d.date, d.state, d.sessions])).toEqual([
      ['2026-03-01', 'covered', 40],
      ['2026-03-02', 'partial', 0],
      ['2026-03-03', 'partial', 7],
      ['2026-03-04', 'partial', 0],
      ['2026-03-05', 'not-yet', 0],
      ['2026-03-06', 'not-yet', 0],
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

  it('a backfill going now: the days of its range it has not covered yet are not-yet, from its start, without a command', () => {
    const cal = coverageCalendar(
      spansOf([
        ['2026-03-01T00:00:00', '2026-03-02T00:00:00'],
        ['2026-03-03T00:00:00', '2026-03-04T00:00:00'],
      ]),
      new Map(),
      NOW,
      { running: { from: at('2026-02-27T00:00:00'), to: at('2026-03-05T00:00:00') } },
    );
    expect(cal.days.map((d) => [d.date, d.state])).toEqual([
      ['2026-02-27', 'not-yet'],
      ['2026-02-28', 'not-yet'],
      ['2026-03-01', 'covered'],
      ['2026-03-02', 'partial'],
      ['2026-03-03', 'covered'],
      ['2026-03-04', 'partial'],
      ['2026-03-05', 'not-yet'],
      ['2026-03-06', 'not-yet'],
    ]);
    expect(cal.gaps[0]).toEqual({ from: '2026-03-02T00:00:00Z', to: '2026-03-03T00:00:00Z', kind: 'exporting', command: null });
  });

  it('an unfinished backfill: its days and the gap it is in are resumed by running it again (as `status` says), the days after it exported', () => {
    const spans = spansOf([['2026-03-01T00:00:00', '2026-03-02T00:00:00']]);
    const unfinished = [{ from: '2026-03-03T00:00:00Z', to: '2026-03-05T00:00:00Z' }];
    const cal = coverageCalendar(spans, new Map(), NOW, { target: { dataDir: '/d' }, unfinished });
    const resume = 'session-etl backfill --from 2026-03-03 --to 2026-03-05 --data-dir /d';
    expect(cal.days.map((d) => [d.date, d.command])).toEqual([
      ['2026-03-01', null],
      ['2026-03-02', 'session-etl export --data-dir /d'],
      ['2026-03-03', resume],
      ['2026-03-04', resume],
      ['2026-03-05', 'session-etl export --data-dir /d'],
      ['2026-03-06', 'session-etl export --data-dir /d'],
    ]);
    expect(cal.gaps).toEqual([{ from: '2026-03-02T00:00:00Z', to: '2026-03-06T12:00:00Z', kind: 'after-checkpoint', command: resume }]);
    // Once a later run covered its range, it is no longer offered.
    const later = coverageCalendar(spansOf([['2026-03-01T00:00:00', '2026-03-05T00:00:00']]), new Map(), NOW, { target: { dataDir: '/d' }, unfinished });
    expect(later.gaps).toEqual([{ from: '2026-03-05T00:00:00Z', to: '2026-03-06T12:00:00Z', kind: 'after-checkpoint', command: 'session-etl export --data-dir /d' }]);
  });

  it('a demo directory: no command anywhere (its emulator ended with the demo)', () => {
    const cal = coverageCalendar(spansOf([['2026-03-01T00:00:00', '2026-03-02T00:00:00'], ['2026-03-03T00:00:00', '2026-03-04T00:00:00']]), new Map(), NOW, { noCommands: true });
    expect(cal.gaps.length).toBe(2);
    expect([...cal.days, ...cal.gaps].every((x) => x.command === null)).toBe(true);
  });

  it('nothing covered: no days', () => {
    expect(coverageCalendar([], new Map(), NOW)).toEqual({ days: [], gaps: [] });
  });
});
