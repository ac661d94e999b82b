/**
 * The `sessions --output table` layout with text a terminal draws wider or narrower than its code
 * points: CJK (two columns), a letter with a combining accent (one), emoji joined by U+200D, a flag
 * and a keycap (two each). Each expected line is written out by hand, padded as a terminal shows it.
 */
import { describe, expect, it } from 'vitest';
import { renderTable } from '../../src/cli/commands/sessions.js';
import { displayWidth, truncateToWidth } from '../../src/cli/display-width.js';

describe('display width', () => {
  it('the table lines up with CJK, emoji (ZWJ sequence, flag, keycap) and combining marks', () => {
    const rows = [
      { name: 'abc', id: '1' },
      { name: '漢字', id: '2' }, // 2 + 2 columns
      { name: 'e\u0301te', id: '3' }, // é as e + U+0301: 3 columns
      { name: '1\ufe0f\u20e3 go', id: '4' }, // keycap 1️⃣ (2) + space + go: 5 columns, the widest
      { name: '👩\u200d💻🇯🇵', id: '5' }, // one ZWJ emoji (2) and one flag (2)
    ];
    expect(renderTable(['name', 'id'], rows).split('\n')).toEqual([
      'name   id',
      '-----  --',
      'abc    1',
      '漢字   2',
      'e\u0301te    3',
      '1\ufe0f\u20e3 go  4',
      '👩\u200d💻🇯🇵   5',
      '',
    ]);
  });

  it('widths and cuts go by grapheme', () => {
    expect([displayWidth('한국어'), displayWidth('e\u0301'), displayWidth('1\ufe0f\u20e3'), displayWidth('👍🏽'), displayWidth('\u200b')]).toEqual([6, 1, 2, 2, 0]);
    expect(truncateToWidth('漢字漢字漢字', 5)).toBe('漢字…');
    expect(truncateToWidth('1\ufe0f\u20e32\ufe0f\u20e33\ufe0f\u20e3', 5)).toBe('1\ufe0f\u20e32\ufe0f\u20e3…');
  });
});
