import { describe, expect, it } from 'vitest';
import { csvCell, csvRecord, csvTime, sessionsCsv } from '../../src/util/csv-cell.js';
import { parseCsvWithPython } from '../helpers/python-csv.js';

describe('csvCell: RFC 4180, every text cell quoted, and no formula a spreadsheet would run (OWASP)', () => {
  it.each([
    ['a formula', '=1+1', `"'=1+1"`],
    ['a formula after a number', '-1+HYPERLINK("http://evil.example/")', `"'-1+HYPERLINK(""http://evil.example/"")"`],
    ['DDE after a number', "-2+3+cmd|' /C calc'!A0", `"'-2+3+cmd|' /C calc'!A0"`],
    ['a plus', '+SUM(A1)', `"'+SUM(A1)"`],
    ['an at', '@SUM(A1)', `"'@SUM(A1)"`],
    ['a leading tab', '\t=1', `"'\t'=1"`],
    ['a leading carriage return', '\r=1', `"'\r'=1"`],
    ['a formula after a semicolon (the separator in most European locales)', "x;=cmd|' /C calc'!A0", `"x;'=cmd|' /C calc'!A0"`],
    ['a formula after a tab', 'a\t=1+1', `"a\t'=1+1"`],
    ['a formula after a line break', 'a\n@SUM(A1)', `"a\n'@SUM(A1)"`],
    ['a number after a semicolon (that cell would run on past this one\'s end)', 'a;-12', `"a;'-12"`],
    ['a negative number as text', '-12', '"-12"'],
    ['a negative decimal as text', '-12.50', '"-12.50"'],
    ['a signed exponent as text', '+1e5', '"+1e5"'],
    ['a number', -3, '-3'],
    ['a BIGINT', 12n, '12'],
    ['a minus and a word', '-abc', `"'-abc"`],
    ['a lone minus', '-', `"'-"`],
    ['plain text', 'Ada Lovelace', '"Ada Lovelace"'],
    ['text with a comma', 'Lovelace, Ada', '"Lovelace, Ada"'],
    ['text with a quote', 'say "hi"', '"say ""hi"""'],
    ['a formula sign inside the text', 'a=b', '"a=b"'],
    ['empty text', '', '""'],
    ['null', null, ''],
    ['undefined', undefined, ''],
    ['a boolean', true, 'true'],
  ])('%s', (_what, value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it('a record joins its cells with commas', () => {
    expect(csvRecord(['id', -1, '=x', null])).toBe(`"id",-1,"'=x",`);
  });

  it('times: epoch seconds as ISO 8601 UTC without milliseconds; null stays empty', () => {
    expect(csvTime(1_772_366_400)).toBe('2026-03-01T12:00:00Z');
    expect(csvTime(1_772_366_400n)).toBe('2026-03-01T12:00:00Z');
    expect(csvTime(null)).toBeNull();
  });
});

describe('the sessions CSV read back by an independent reader (Python csv), in every locale a spreadsheet has', () => {
  const hostile = ["x;=cmd|' /C calc'!A0", 'a\t=1+1', '=1+1', '-1+HYPERLINK("http://evil.example/")', '@SUM(A1)', 'line\r\n+1', 'Lovelace, Ada'];
  const csv = sessionsCsv(['id', 'externalFields.customerName', 'started', 'duration'], [false, false, true, false]);
  const text = csv.header + hostile.map((name, i) => csv.row([`id-${i}`, name, 1_772_366_400 + i, i === 0 ? null : -i])).join('');

  it('RFC 4180: CRLF line ends, the cells read back as written (with the leading quote), times in ISO 8601 UTC', () => {
    expect(text.endsWith('\r\n')).toBe(true);
    expect(/(?<!\r)\n/.test(text.replace(/"(?:[^"]|"")*"/g, ''))).toBe(false); // no bare LF outside a quoted cell
    const records = parseCsvWithPython(text);
    expect(records[0]).toEqual(['id', 'externalFields.customerName', 'started', 'duration']);
    expect(records.slice(1)).toEqual(hostile.map((name, i) => [
      `id-${i}`,
      name.replace(/^([=+\-@])/, "'$1").replace(/([;\t\n])([=+\-@])/g, "$1'$2"),
      new Date((1_772_366_400 + i) * 1000).toISOString().replace('.000Z', 'Z'),
      i === 0 ? '' : String(-i),
    ]));
  });

  it.each([[','], [';'], ['\t']])('read with the separator %j, no cell starts a formula', (delimiter) => {
    // Read with another separator or ignoring the quotes, as a spreadsheet might: a cell starting with
    // a formula character is a number, or neutralised by its leading quote.
    for (const raw of [text, text.replace(/"/g, '')]) {
      const cells = parseCsvWithPython(raw, delimiter).flat().map((c) => c.replace(/^"/, ''));
      const formulas = cells.filter((c) => /^[=+\-@]/.test(c) && !/^[+-]?\d+(\.\d*)?$/.test(c));
      expect(formulas).toEqual([]);
    }
  });
});
