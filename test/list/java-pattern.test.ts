import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { translateJavaPattern, type TranslatedPattern } from '../../src/list/java-pattern.js';
import { openJavaOracle } from './helpers/java-oracle.js';

const fail = (index: number, problem: string, expected: string): never => {
  throw Object.assign(new Error(`${problem}; expected ${expected}`), { index });
};

let connection: DuckDBConnection;
let instance: DuckDBInstance;
beforeAll(async () => {
  instance = await DuckDBInstance.create(':memory:');
  connection = await instance.connect();
});
afterAll(() => {
  connection.closeSync();
  instance.closeSync();
});

async function re2Matches(p: TranslatedPattern, text: string): Promise<boolean> {
  const rows = (await connection.runAndReadAll('SELECT regexp_full_match(?, ?) AS m', [text, p.re2])).getRowObjectsJS();
  return rows[0]?.['m'] === true;
}

// [Java pattern, values it matches as a whole, values it does not match]
const accepted: [string, string[], string[]][] = [
  ['abc', ['abc'], ['abcd', 'xabc', 'ABC', '']],
  ['.*abc.*', ['abc', 'xxabcxx'], ['ab c']],
  ['a.c', ['abc', 'a😀c', 'a\u0000c'], ['a\nc', 'a\rc', 'a\u0085c', 'a\u2028c', 'a\u2029c', 'ac']],
  ['(?s)a.c', ['a\nc', 'a\rc'], ['ac']],
  ['(?d)a.c', ['a\rc', 'a\u2028c'], ['a\nc']],
  ['\\d+', ['0123456789'], ['\u0661\u0662', '12a', '']],
  ['\\D', ['a', '\u0661'], ['5']],
  ['\\w+', ['a_Z9'], ['é', 'a-b']],
  ['\\s', [' ', '\t', '\n', '\u000b', '\f', '\r'], ['\u00a0', '\u2003', '\u0085']],
  ['\\S', ['a', '\u00a0'], [' ']],
  ['\\h', [' ', '\t', '\u00a0', '\u3000'], ['\n']],
  ['\\v', ['\n', '\u000b', '\u2028', '\u0085'], [' ']],
  ['[a-c]+', ['abc', 'cab'], ['d', 'abcd']],
  ['[^a-c]', ['d', '😀', '\n'], ['a', '', 'dd']],
  ['[]a]+', [']a]'], ['b']],
  ['[^]a]', ['b'], [']', 'a']],
  ['[a-z&&[^aeiou]]+', ['bcd', 'xyz'], ['a', 'bad']],
  ['[abc&&b-d]', ['b', 'c'], ['a', 'd']],
  ['[a[0-9]]+', ['a5', '9'], ['b']],
  ['[a&&b]', [], ['a', 'b', '']],
  ['[&&a][a&&]', ['aa'], ['&a']],
  ['[^a-c&&b-d]', ['a', 'd', 'e'], ['b', 'c']],
  ['[^a&&b]', ['a', 'b'], []],
  ['[^[a]b]', ['c'], ['a', 'b']],
  ['[a[^b]]', ['a', 'c'], ['b']],
  ['[ab&&bc&&b]', ['b'], ['a', 'c']],
  ['[-a]+', ['-a'], ['b']],
  ['[a-]+', ['a-'], ['b']],
  ['[--/]', ['-', '.', '/'], [',', '0']],
  ['[\\Q]\\E]', [']'], ['\\']],
  ['[\\d.]+', ['1.5'], ['a']],
  ['(?i)abc', ['ABC', 'aBc', 'abc'], ['ÀBC']],
  ['(?i)é', ['é'], ['É']],
  ['(?i)[^a]', ['b', 'B'], ['a', 'A']],
  ['(?i)[x-z]', ['X', 'y'], ['w']],
  ['(?i)\\p{Lower}', ['a', 'A'], ['1']],
  ['(?i)\\P{Lower}', ['1'], ['a', 'A']],
  ['a(?i)b|c', ['aB', 'ab', 'C', 'c'], ['AB']],
  ['(?i:a)b', ['Ab', 'ab'], ['AB']],
  ['((?i)a)b', ['Ab'], ['AB']],
  ['(?i)a(?-i)b', ['Ab'], ['AB']],
  ['\\Qa.b\\E', ['a.b'], ['axb']],
  ['\\Qab\\E+', ['abbb'], ['abab']],
  ['\\Qa*', ['a*'], ['aa']],
  ['\\x41\\u0042\\x{1F600}\\0101\\t\\0777', ['AB😀A\t?7'], []],
  ['\\uD83D\\uDE00', ['😀'], ['\u00d8']],
  ['\\cA\\e\\a', ['\u0001\u001b\u0007'], []],
  ['a{2,3}', ['aa', 'aaa'], ['a', 'aaaa']],
  ['a{2}', ['aa'], ['aaa']],
  ['a{2,}', ['aa', 'aaaaa'], ['a']],
  ['a{0}b', ['b'], ['ab']],
  ['a*?b', ['aab', 'b'], ['aa']],
  ['(ab)+?', ['abab'], ['aba']],
  ['^abc$', ['abc'], ['abc\n']],
  ['^a|b$', ['a', 'b'], ['ab']],
  ['(?i)^a$|^b', ['A', 'B'], ['c']],
  ['\\Aabc\\z', ['abc'], []],
  ['abc\\Z', ['abc'], ['abc\n']],
  ['(.*\\W)?foo(\\W.*)?', ['a foo b', 'foo', 'x.foo'], ['afoo', 'foo_']],
  ['\\p{Punct}+', ['!?_'], ['¿', ' ']],
  ['\\p{Alpha}\\p{Digit}\\p{XDigit}\\p{Space}\\p{Upper}', ['a1f Z'], ['a1g Z']],
  ['', [''], ['a', ' ']],
  ['a|', ['a', ''], ['b']],
  ['()', [''], ['a']],
  ['(|a)*', ['', 'aaa'], ['b']],
  ['\\.\\*\\+\\?\\(\\)\\[\\{\\|\\\\\\^\\$', ['.*+?()[{|\\^$'], []],
  ['a}]', ['a}]'], []],
  ['(?<name>a)b', ['ab'], ['b']],
  ['ü', ['ü'], ['u\u0308']],
  ['[\\x{1F600}-\\x{1F64F}]', ['😃'], ['😀x', '\u{1F650}']],
  ['\\x{10FFFF}|\\uFFFF', ['\u{10ffff}', '\uffff'], []],
  ['[\\uE000-\\uFFFF]', ['\ue000'], ['😀']],
  ['%', ['%'], []],
  ['(?m)^a$', ['a'], ['a\n']],
];

describe('Java patterns both engines accept identically', () => {
  it.each(accepted)('%j', async (pattern, yes, no) => {
    const p = translateJavaPattern(pattern, fail);
    for (const text of yes) {
      expect({ text, js: p.js.test(text), re2: await re2Matches(p, text) }).toEqual({ text, js: true, re2: true });
    }
    for (const text of no) {
      expect({ text, js: p.js.test(text), re2: await re2Matches(p, text) }).toEqual({ text, js: false, re2: false });
    }
  });
});

describe('the table above is what java.util.regex says', () => {
  const oracle = openJavaOracle();
  it.skipIf(!oracle)(`on JDK ${oracle?.major}`, () => {
    try {
      const cases = accepted.flatMap(([p, yes, no]) => [...yes.map((t) => [p, t, true] as const), ...no.map((t) => [p, t, false] as const)]);
      const java = oracle!.matches(cases.map(([p, t]) => [p, t] as const));
      expect(cases.filter(([, , want], i) => java[i] !== want)).toEqual([]);
    } finally {
      oracle!.close();
    }
  });
});

// [Java pattern, index of the problem, a word of the message]
const rejected: [string, number, string][] = [
  ['a*+', 2, 'possessive'],
  ['a{2}+', 4, 'possessive'],
  ['(?>a)', 0, 'atomic'],
  ['(?=a)a', 0, 'lookaround'],
  ['(?!a)b', 0, 'lookaround'],
  ['b(?<=b)', 1, 'lookaround'],
  ['(?<!a)b', 0, 'lookaround'],
  ['(a)\\1', 3, 'backreference'],
  ['(?<n>a)\\k<n>', 7, 'backreference'],
  ['\\p{L}', 0, 'property'],
  ['\\pL', 0, 'property'],
  ['\\p{javaLowerCase}', 0, 'property'],
  ['\\p{IsLatin}', 0, 'property'],
  ['[\\p{InGreek}]', 1, 'property'],
  ['\\R', 0, '\\R'],
  ['\\X', 0, '\\X'],
  ['\\G', 0, '\\G'],
  ['\\N{LATIN SMALL LETTER A}', 0, '\\N'],
  ['.*\\bfoo\\b.*', 2, 'word boundaries'],
  ['a\\Bb', 1, 'word boundaries'],
  ['\\b{g}', 0, 'word boundaries'],
  ['(?u)a', 2, 'flag "u"'],
  ['(?U)a', 2, 'flag "U"'],
  ['(?x)a', 2, 'comments'],
  ['(?q)a', 2, 'unknown group construct'],
  ['a^', 1, 'anchor'],
  ['a$b', 1, 'anchor'],
  ['(^a)', 1, 'anchor'],
  ['(a$)', 2, 'anchor'],
  ['a\\Ab', 1, 'anchor'],
  ['*a', 0, 'nothing to repeat'],
  ['a**', 2, 'nothing to repeat'],
  ['a|*', 2, 'nothing to repeat'],
  ['{', 0, 'nothing to repeat'],
  ['a{2}{3}', 4, 'silently ignore'],
  ['a{x}', 2, 'malformed repetition'],
  ['a{,3}', 2, 'malformed repetition'],
  ['a{2', 3, 'malformed repetition'],
  ['a{3,2}', 1, 'maximum below its minimum'],
  ['a{1001}', 1, 'above 1000'],
  ['(a{100}){11}', 2, 'multiply'],
  ['((a{10}){10}){11}', 3, 'multiply'],
  ['[a', 2, 'unclosed character class'],
  ['[]', 2, 'unclosed character class'],
  ['(a', 2, 'unclosed group'],
  ['a)', 1, 'unmatched'],
  ['\\', 0, 'lone backslash'],
  ['\\y', 0, 'unknown escape'],
  ['\\E', 0, '\\E'],
  ['[z-a]', 1, 'reversed'],
  ['[a-\\d]', 3, 'range cannot end with a class'],
  ['[\\b]', 1, 'word boundaries'],
  ['[\\A]', 1, 'cannot appear in a character class'],
  ['\\uD800', 0, 'lone surrogate'],
  ['\\x{D800}', 0, 'lone surrogate'],
  ['\\x{110000}', 0, 'malformed'],
  ['\\xG1', 0, 'malformed'],
  ['\\u12', 0, 'malformed'],
  ['\\0', 0, 'octal'],
  ['\\08', 0, 'octal'],
  ['\\c', 0, 'control escape'],
  ['[&&]', 0, 'without members'],
  ['(?<1a>x)', 3, 'group name'],
  ['(?i', 3, 'unclosed group'],
  ['('.repeat(101) + ')'.repeat(101), 100, 'nested deeper'],
  ['['.repeat(102) + 'a' + ']'.repeat(102), 101, 'nested deeper'],
];

describe('Java patterns the engines cannot share are rejected with a position', () => {
  it.each(rejected)('%j at %i', (pattern, index, word) => {
    let caught: unknown;
    try {
      translateJavaPattern(pattern, fail);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(Error);
    expect({ index: (caught as { index: number }).index, message: (caught as Error).message })
      .toEqual({ index, message: expect.stringContaining(word) });
  });
});

describe('size limits', () => {
  it('accepts the largest repetition DuckDB compiles, and DuckDB compiles it', async () => {
    const p = translateJavaPattern('(?:[^a]{10}){100}', fail);
    expect(await re2Matches(p, 'b'.repeat(1000))).toBe(true);
    expect(p.js.test('b'.repeat(1000))).toBe(true);
  });

  it('rejects a pattern too large for RE2 before DuckDB sees it', () => {
    expect(() => translateJavaPattern(`(?:${'abcdefghij'.repeat(20)}){1000}`, fail)).toThrow(/too large/);
  });
});
