import { describe, expect, it } from 'vitest';
import { asciiLowerCase, compareCodePoints, compareStrings, compareValues } from '../../src/list/compare-values.js';

describe('compareValues: the document\'s comparison rules', () => {
  // [a, b, sign of compare(a, b)]
  it.each([
    ['null before non-null', null, 'a', -1],
    ['null before false', null, false, -1],
    ['null before 0', null, 0, -1],
    ['null before the empty string', null, '', -1],
    ['absent counts as null', undefined, null, 0],
    ['numbers numerically', 9, 10, -1],
    ['negative numbers', -1, 0, -1],
    ['fractions', 1.5, 1.25, 1],
    ['equal numbers', 7, 7, 0],
    ['false before true', false, true, -1],
    ['equal booleans', true, true, 0],
    ['strings', 'a', 'b', -1],
    ['ASCII letters without case first', 'B', 'a', 1],
    ['then upper case before lower case', 'A', 'a', -1],
    ['apple before Banana', 'apple', 'Banana', -1],
    ['the empty string first', '', 'a', -1],
    ['a prefix first', 'ab', 'abc', -1],
    ['leading zeros are text', '0012', '12', -1],
    ['digits before letters', '9', 'a', -1],
    ['non-ASCII by code point: é after z', 'é', 'z', 1],
    ['no Unicode case folding: É before é', 'É', 'é', -1],
    ['Kelvin sign is not k', '\u212a', 'l', 1],
    ['supplementary after U+E000 (code points, not UTF-16)', '😀', '\ue000', 1],
    ['identical strings tie', 'Zoë', 'Zoë', 0],
    ['no normalization: ü vs u+combining', 'ü', 'u\u0308', 1],
    ['arrays: shorter first', [9], [1, 1], -1],
    ['arrays: equal length by sorted items', [3, 1], [1, 2], 1],
    ['arrays: same items in another order tie', [2, 1], [1, 2], 0],
    ['arrays: null items first', [null], [0], -1],
    ['arrays: empty first', [], [null], -1],
    ['arrays of strings', ['b', 'A'], ['a', 'b'], -1],
    ['mixed types: boolean before number', false, 0, -1],
    ['mixed types: number before string', 1, 'a', -1],
    ['mixed types: string before array', 'z', [], -1],
  ] as [string, unknown, unknown, number][])('%s', (_, a, b, sign) => {
    expect(Math.sign(compareValues(a, b))).toBe(sign);
    expect(Math.sign(compareValues(b, a))).toBe(-sign || 0);
  });
});

describe('compareCodePoints', () => {
  it.each([
    ['a', 'b', -1],
    ['\uffff', '\u{10000}', -1],
    ['\u{1F600}', '\u{1F601}', -1],
    ['\ud7ff', '\ue000', -1],
    ['abc', 'ab', 1],
    ['', '', 0],
  ])('%j vs %j', (a, b, sign) => {
    expect(Math.sign(compareCodePoints(a, b))).toBe(sign);
  });

  it('orders like UTF-8 bytes (DuckDB\'s binary collation)', () => {
    const strings = ['\ue000', '😀', 'z', 'é', 'A', '\u{10ffff}', '\uffff', ''];
    const byBytes = [...strings].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect([...strings].sort(compareCodePoints)).toEqual(byBytes);
  });
});

describe('compareStrings', () => {
  it('sorts a mixed list', () => {
    const list = ['bob', 'Émile', 'alice', 'Alice', '😀', '', 'Bob', 'zoe', '_x', '0'];
    expect([...list].sort(compareStrings)).toEqual(['', '0', '_x', 'Alice', 'alice', 'Bob', 'bob', 'zoe', 'Émile', '😀']);
  });

  it('lowers US-ASCII letters only', () => {
    expect(asciiLowerCase('ABC-Ẃ-É-\u212a-Z')).toBe('abc-Ẃ-É-\u212a-z');
  });
});
