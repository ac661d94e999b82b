import { describe, expect, it } from 'vitest';
import { csvCell, csvRecord } from '../../src/util/csv-cell.js';

describe('csvCell: RFC 4180, and no formula a spreadsheet would run (OWASP)', () => {
  it.each([
    ['a formula', '=1+1', "'=1+1"],
    ['a formula after a number', '-1+HYPERLINK("http://evil.example/")', `"'-1+HYPERLINK(""http://evil.example/"")"`],
    ['DDE after a number', "-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"],
    ['a plus', '+SUM(A1)', "'+SUM(A1)"],
    ['an at', '@SUM(A1)', "'@SUM(A1)"],
    ['a leading tab', '\t=1', "'\t=1"],
    ['a leading carriage return', '\r=1', `"'\r=1"`],
    ['a negative number', '-12', '-12'],
    ['a negative decimal', '-12.50', '-12.50'],
    ['a signed exponent', '+1e5', '+1e5'],
    ['a number as a JavaScript number', -3, '-3'],
    ['a minus and a word', '-abc', "'-abc"],
    ['a lone minus', '-', "'-"],
    ['plain text', 'Ada Lovelace', 'Ada Lovelace'],
    ['text with a comma', 'Lovelace, Ada', '"Lovelace, Ada"'],
    ['text with a quote', 'say "hi"', '"say ""hi"""'],
    ['a formula sign inside the text', 'a=b', 'a=b'],
    ['null', null, ''],
    ['undefined', undefined, ''],
    ['a boolean', true, 'true'],
  ])('%s', (_what, value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it('a record joins its cells with commas', () => {
    expect(csvRecord(['id', -1, '=x', null])).toBe("id,-1,'=x,");
  });
});
