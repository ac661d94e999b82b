/**
 * A Java pattern's characters and escapes (`\t`, `\x{…}`, `\d`, `\p{Alpha}`, `\Q…\E`, …), read into
 * code points, sets, anchors or quoted runs, refusing what the engines cannot agree on; the tree
 * java-pattern-reader.ts builds; Java's predefined classes as explicit sets (US-ASCII, as Java
 * without UNICODE_CHARACTER_CLASS), so that neither engine's own tables come into play.
 */
import { CodePointSet } from './code-point-set.js';

/** Reports a problem at `index` into the pattern and throws. */
export type PatternFail = (index: number, problem: string, expected: string) => never;

/** Deepest nesting of groups and classes accepted, so a hostile pattern cannot exhaust the stack. */
export const MAX_PATTERN_DEPTH = 100;
/** RE2's largest repetition count; it also caps the product of nested counts at this value. */
export const MAX_REPEAT = 1000;

/** A pattern as code-point sets in sequences, alternatives and repetitions; nothing else is left. */
export type PatternNode =
  | { readonly type: 'set'; readonly set: CodePointSet }
  | { readonly type: 'seq'; readonly items: readonly PatternNode[] }
  | { readonly type: 'alt'; readonly alts: readonly PatternNode[] }
  | { readonly type: 'repeat'; readonly body: PatternNode; readonly min: number; readonly max: number | null; readonly at: number };

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

const POSIX: Record<string, CodePointSet> = {
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

const CLASS_ESCAPES: Record<string, CodePointSet> = {
  d: DIGIT, w: WORD, s: SPACE, h: HORIZONTAL_SPACE, v: VERTICAL_SPACE,
};

type Escape =
  | { kind: 'char'; cp: number }
  | { kind: 'set'; set: CodePointSet; negated: boolean }
  | { kind: 'anchor'; end: boolean }
  | { kind: 'quote'; cps: number[] };

export class PatternLexer {
  protected i = 0;

  constructor(protected readonly src: string, protected readonly fail: PatternFail) {}

  protected peek(offset = 0): string | undefined {
    return this.src[this.i + offset];
  }

  protected take(): number {
    const cp = this.src.codePointAt(this.i) ?? 0;
    this.i += cp > 0xffff ? 2 : 1;
    return cp;
  }

  protected escape({ inClass }: { inClass: boolean }): Escape {
    const at = this.i;
    this.i++; // backslash
    const c = this.peek();
    if (c === undefined) return this.fail(at, 'the pattern ends with a lone backslash', 'a character after "\\"');
    const simple: Record<string, number> = { t: 0x09, n: 0x0a, r: 0x0d, f: 0x0c, a: 0x07, e: 0x1b };
    if (c in simple) { this.i++; return { kind: 'char', cp: simple[c]! }; }
    if (c in CLASS_ESCAPES) { this.i++; return { kind: 'set', set: CLASS_ESCAPES[c]!, negated: false }; }
    const lower = c.toLowerCase();
    if (c !== lower && lower in CLASS_ESCAPES) { this.i++; return { kind: 'set', set: CLASS_ESCAPES[lower]!, negated: true }; }
    switch (c) {
      case '0': return { kind: 'char', cp: this.octal(at) };
      case 'x': return { kind: 'char', cp: this.hex(at) };
      case 'u': return { kind: 'char', cp: this.unicode(at) };
      case 'c': {
        this.i++;
        if (this.peek() === undefined) this.fail(at, 'control escape without its letter', 'a letter after "\\c"');
        return { kind: 'char', cp: this.src.charCodeAt(this.i++) ^ 64 };
      }
      case 'p':
      case 'P':
        return this.property(at, c === 'P');
      case 'b':
      case 'B':
        // Java counts a combining mark after a letter as part of the word (Unicode tables again),
        // and before Java 19 used Unicode letters throughout; RE2 cannot look behind to copy it.
        return this.fail(at, `word boundaries "\\${c}" are not supported: Java's differ from the other engines around combining marks, and between Java versions`,
          'explicit neighbours instead, e.g. "(.*\\W)?word(\\W.*)?" for ".*\\bword\\b.*"');
      case 'A': this.i++; return { kind: 'anchor', end: false };
      case 'z':
      case 'Z': this.i++; return { kind: 'anchor', end: true };
      case 'Q': return this.quote();
    }
    if (/[1-9]/.test(c) || c === 'k') {
      return this.fail(at, 'backreferences are not supported (DuckDB\'s RE2 engine has none)', 'a pattern without "\\1" or "\\k<name>"');
    }
    if (/[A-Za-z]/.test(c)) {
      const unsupported: Record<string, string> = {
        G: '"\\G" (end of the previous match)',
        R: '"\\R" (any line break)',
        X: '"\\X" (grapheme cluster)',
        N: '"\\N{name}" (named character)',
        E: '"\\E" without a "\\Q" before it',
      };
      const what = unsupported[c];
      return this.fail(at, what ? `${what} is not supported` : `unknown escape "\\${c}"`,
        inClass ? 'a known escape, or a backslash before a non-letter' : 'a known escape such as \\d \\w \\s \\t \\x{…}, or a backslash before a non-letter');
    }
    // A backslash before any other character stands for that character.
    return { kind: 'char', cp: this.take() };
  }

  /** `\0n`, `\0nn`, `\0mnn` (m <= 3), as Java reads them. */
  private octal(at: number): number {
    this.i++; // 0
    const m = /^[0-7]{1,3}/.exec(this.src.slice(this.i));
    if (!m) return this.fail(at, 'malformed octal escape', 'one to three octal digits after "\\0"');
    const digits = m[0].length === 3 && m[0][0]! > '3' ? m[0].slice(0, 2) : m[0];
    this.i += digits.length;
    return parseInt(digits, 8);
  }

  private hex(at: number): number {
    this.i++; // x
    if (this.peek() === '{') {
      const m = /^\{([0-9A-Fa-f]+)\}/.exec(this.src.slice(this.i));
      const cp = m ? parseInt(m[1]!, 16) : NaN;
      if (!m || !(cp <= 0x10ffff)) return this.fail(at, 'malformed "\\x{…}" escape', 'hexadecimal digits of a code point up to 10FFFF, then "}"');
      this.i += m[0].length;
      return this.notSurrogate(cp, at);
    }
    const m = /^[0-9A-Fa-f]{2}/.exec(this.src.slice(this.i));
    if (!m) return this.fail(at, 'malformed "\\x" escape', 'two hexadecimal digits, or "{…}"');
    this.i += 2;
    return parseInt(m[0], 16);
  }

  /** `\uhhhh`; a high and a low surrogate escape in a row make one code point, as in Java. */
  private unicode(at: number): number {
    const read = (): number | null => {
      const m = /^u([0-9A-Fa-f]{4})/.exec(this.src.slice(this.i));
      if (!m) return null;
      this.i += 5;
      return parseInt(m[1]!, 16);
    };
    const cp = read();
    if (cp === null) return this.fail(at, 'malformed "\\u" escape', 'four hexadecimal digits after "\\u"');
    if (cp >= 0xd800 && cp <= 0xdbff && this.peek() === '\\') {
      const back = this.i;
      this.i++;
      const low = read();
      if (low !== null && low >= 0xdc00 && low <= 0xdfff) return 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
      this.i = back;
    }
    return this.notSurrogate(cp, at);
  }

  private notSurrogate(cp: number, at: number): number {
    if (cp >= 0xd800 && cp <= 0xdfff) {
      this.fail(at, 'a lone surrogate cannot occur in a stored string', 'a code point outside D800–DFFF (write supplementary characters as "\\x{1F600}")');
    }
    return cp;
  }

  private property(at: number, negated: boolean): Escape {
    this.i++; // p or P
    let name: string;
    if (this.peek() === '{') {
      const end = this.src.indexOf('}', this.i);
      if (end < 0) return this.fail(at, 'unclosed property name', '"}" after the property name');
      name = this.src.slice(this.i + 1, end);
      this.i = end + 1;
    } else {
      name = this.peek() ?? '';
      this.i++;
    }
    const set = POSIX[name];
    if (!set) {
      return this.fail(at, `property class "\\p{${name}}" is not supported: Unicode properties differ between the engines' Unicode versions`,
        `a POSIX class (${Object.keys(POSIX).join(', ')}) or an explicit range such as [\\x{0400}-\\x{04FF}]`);
    }
    return { kind: 'set', set, negated };
  }

  /** `\Q…\E`: everything between is literal; without `\E` the quote runs to the end, as in Java. */
  private quote(): Escape {
    this.i++; // Q
    const end = this.src.indexOf('\\E', this.i);
    const text = this.src.slice(this.i, end < 0 ? undefined : end);
    this.i = end < 0 ? this.src.length : end + 2;
    return { kind: 'quote', cps: [...text].map((ch) => ch.codePointAt(0) ?? 0) };
  }
}
