/** The volume-anomaly rule, table-driven: which finished days it flags, and which it leaves alone. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_VOLUME_RULE, findVolumeAnomalies, wholeDays, type VolumeRule } from '../../src/store/volume-anomalies.js';
import { D, isoDay } from '../helpers/time.js';

/** A Wednesday. */
const WED = Date.parse('2026-03-04T00:00:00Z') / 1000;

/** Five weeks of days ending with the Wednesday WED (included): weekdays `weekday` sessions, weekends `weekend`. */
function weeks(weekday: number, weekend: number, edits: Record<string, number> = {}): Map<string, number> {
  const m = new Map<string, number>();
  for (let t = WED - 35 * D; t <= WED + 6 * D; t += D) {
    const dow = new Date(t * 1000).getUTCDay();
    m.set(isoDay(t), dow === 0 || dow === 6 ? weekend : weekday);
  }
  for (const [k, v] of Object.entries(edits)) m.set(k, v);
  return m;
}
const covered = (from: number, to: number) => [{ start: from, end: to }];
const FIVE_WEEKS = covered(WED - 28 * D, WED + D);

describe('findVolumeAnomalies', () => {
  it.each<[string, Map<string, number>, Array<{ start: number; end: number }>, Partial<VolumeRule>, string[]]>([
    ['a day at a tenth of its weekday is flagged', weeks(200, 40, { '2026-03-04': 20 }), FIVE_WEEKS, {}, ['2026-03-04']],
    ['a day at 60 % is not (threshold 0.5)', weeks(200, 40, { '2026-03-04': 120 }), FIVE_WEEKS, {}, []],
    ['the same day with threshold 0.7 is', weeks(200, 40, { '2026-03-04': 120 }), FIVE_WEEKS, { threshold: 0.7 }, ['2026-03-04']],
    ['threshold 0 turns the check off', weeks(200, 40, { '2026-03-04': 0 }), FIVE_WEEKS, { threshold: 0 }, []],
    ['a quiet weekend is judged against weekends: no alarm', weeks(200, 40), covered(WED - 35 * D, WED + 6 * D), {}, []],
    ['an empty day (no sessions stored at all) is flagged', weeks(200, 40, { '2026-03-04': 0 }), FIVE_WEEKS, {}, ['2026-03-04']],
    ['too little history (three weeks covered, four needed) is not judged', weeks(200, 40, { '2026-03-04': 20 }), covered(WED - 21 * D, WED + D), {}, []],
    ['with weeks 3, three weeks of history are enough', weeks(200, 40, { '2026-03-04': 20 }), covered(WED - 21 * D, WED + D), { weeks: 3 }, ['2026-03-04']],
    ['a day not covered whole (today, a partial day) is not judged', weeks(200, 40, { '2026-03-04': 20 }), covered(WED - 28 * D, WED + D / 2), {}, []],
    ['a hole in the history: not judged', weeks(200, 40, { '2026-03-04': 20 }), [{ start: WED - 28 * D, end: WED - 14 * D }, { start: WED - 13 * D, end: WED + D }], {}, []],
    ['too little volume to judge (expected below minSessions)', weeks(10, 2, { '2026-03-04': 0 }), FIVE_WEEKS, {}, []],
    ['... unless minSessions is lowered', weeks(10, 2, { '2026-03-04': 0 }), FIVE_WEEKS, { minSessions: 5 }, ['2026-03-04']],
    ['one odd week in the history does not move the median', weeks(200, 40, { '2026-02-18': 5, '2026-03-04': 90 }), FIVE_WEEKS, {}, ['2026-03-04']],
    ['a day filled back to its usual volume is not an anomaly any more', weeks(200, 40, { '2026-03-04': 195 }), FIVE_WEEKS, {}, []],
  ])('%s', (_name, counts, coverage, rule, expected) => {
    const found = findVolumeAnomalies(counts, coverage, { ...DEFAULT_VOLUME_RULE, ...rule });
    expect(found.map((a) => a.date)).toEqual(expected);
  });

  it('gives the day, its sessions and the median of the same weekdays', () => {
    const counts = weeks(200, 40, { '2026-02-04': 180, '2026-02-11': 210, '2026-02-18': 190, '2026-02-25': 230, '2026-03-04': 12 });
    expect(findVolumeAnomalies(counts, FIVE_WEEKS, DEFAULT_VOLUME_RULE)).toEqual([{ date: '2026-03-04', sessions: 12, expected: 200 }]);
  });

  it('a day verify confirmed (same count as then) is a quiet day; a different count is judged again', () => {
    const counts = weeks(200, 40, { '2026-03-04': 20 });
    expect(findVolumeAnomalies(counts, FIVE_WEEKS, DEFAULT_VOLUME_RULE, new Map([['2026-03-04', 20]]))).toEqual([]);
    expect(findVolumeAnomalies(counts, FIVE_WEEKS, DEFAULT_VOLUME_RULE, new Map([['2026-03-04', 35]])).map((a) => a.date)).toEqual(['2026-03-04']);
  });

  it('coverage in adjacent pieces covers a day whole', () => {
    expect([...wholeDays([{ start: WED, end: WED + D / 2 }, { start: WED + D / 2, end: WED + 2 * D + 5 }])].map(isoDay)).toEqual(['2026-03-04', '2026-03-05']);
  });
});
