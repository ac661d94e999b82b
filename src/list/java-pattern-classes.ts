/**
 * Java's predefined character classes as explicit code-point sets (US-ASCII, as Java without
 * UNICODE_CHARACTER_CLASS), so that neither engine's own tables come into play (see java-pattern.ts).
 */
import { CodePointSet } from './code-point-set.js';

export const SURROGATES = CodePointSet.of([0xd800, 0xdfff]);

const range = (lo: string, hi: string): [number, number] => [lo.codePointAt(0) ?? 0, hi.codePointAt(0) ?? 0];
const DIGIT = CodePointSet.of(range('0', '9'));
const LOWER = CodePointSet.of(range('a', 'z'));
const UPPER = CodePointSet.of(range('A', 'Z'));
const ALPHA = LOWER.union(UPPER);
const ALNUM = ALPHA.union(DIGIT);
const WORD = ALNUM.union(CodePointSet.of(0x5f));
const SPACE = CodePointSet.of(0x20, [0x09, 0x0d]); // space, \t \n \x0B \f \r
const PUNCT = CodePointSet.of(range('!', '/'), range(':', '@'), range('[', '`'), range('{', '~'));
const HORIZONTAL_SPACE = CodePointSet.of(0x20, 0x09, 0xa0, 0x1680, 0x180e, [0x2000, 0x200a], 0x202f, 0x205f, 0x3000);
const VERTICAL_SPACE = CodePointSet.of([0x0a, 0x0d], 0x85, 0x2028, 0x2029);
export const LINE_TERMINATORS = CodePointSet.of(0x0a, 0x0d, 0x85, 0x2028, 0x2029);

/** Java's POSIX classes, US-ASCII only as in Java without UNICODE_CHARACTER_CLASS. */
export const POSIX: Record<string, CodePointSet> = {
  Lower: LOWER,
  Upper: UPPER,
  ASCII: CodePointSet.of([0, 0x7f]),
  Alpha: ALPHA,
  Digit: DIGIT,
  Alnum: ALNUM,
  Punct: PUNCT,
  Graph: CodePointSet.of([0x21, 0x7e]),
  Print: CodePointSet.of([0x20, 0x7e]),
  Blank: CodePointSet.of(0x20, 0x09),
  Cntrl: CodePointSet.of([0, 0x1f], 0x7f),
  XDigit: DIGIT.union(CodePointSet.of(range('a', 'f'), range('A', 'F'))),
  Space: SPACE,
};

export const CLASS_ESCAPES: Record<string, CodePointSet> = {
  d: DIGIT, w: WORD, s: SPACE, h: HORIZONTAL_SPACE, v: VERTICAL_SPACE,
};
