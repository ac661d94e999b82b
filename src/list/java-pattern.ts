import { CodePointSet } from './code-point-set.js';
import { CLASS_ESCAPES, LINE_TERMINATORS, POSIX, SURROGATES } from './java-pattern-classes.js';

/**
 * The regular expressions of filter matches: Java `Pattern` syntax, read into a small tree and
 * written out again for the two engines that evaluate it — JavaScript `RegExp` (`u` flag) for the
 * in-memory evaluator and RE2 (DuckDB's `regexp_full_match`) for the SQL one.
 *
 * Nothing of the user's pattern text reaches either engine: every character class, `.`, `\d`,
 * `(?i)` and so on is turned into explicit code-point sets first, so the engines' own (different)
 * ideas of `.`, `\s`, case folding or Unicode tables never come into play. What cannot be written
 * out for both engines with the same meaning is rejected with the position of the construct
 * (see docs/list-conventions.md, "Regular expressions").
 *
 * Matching is whole-value, as Java's `Matcher.matches()`.
 */
export interface TranslatedPattern {
  /** The Java pattern as written in the filter. */
  readonly source: string;
  /** For the in-memory evaluator: anchored at both ends, `u` flag. */
  readonly js: RegExp;
  /** For DuckDB: pass to `regexp_full_match(text, pattern)` (which anchors it). */
  readonly re2: string;
}

/** Reports a problem at `index` (into the pattern) and does not return. */
export type PatternFail = (index: number, problem: string, expected: string) => never;

/** Deepest nesting of groups and classes accepted, so a hostile pattern cannot exhaust the stack. */
export const MAX_PATTERN_DEPTH = 100;
/** RE2's largest repetition count; it also caps the product of nested counts at this value. */
export const MAX_REPEAT = 1000;
/** Rough instruction budget, well below where DuckDB's RE2 gives up with "pattern too large". */
const MAX_PROGRAM_SIZE = 100_000;

type PatternNode =
  | { readonly type: 'set'; readonly set: CodePointSet }
  | { readonly type: 'seq'; readonly items: readonly PatternNode[] }
  | { readonly type: 'alt'; readonly alts: readonly PatternNode[] }
  | { readonly type: 'repeat'; readonly body: PatternNode; readonly min: number; readonly max: number | null; readonly at: number };

interface Flags {
  /** CASE_INSENSITIVE: US-ASCII letters only (Java's default without UNICODE_CASE). */
  i: boolean;
  /** DOTALL. */
  s: boolean;
  /** UNIX_LINES: only `\n` ends a line for `.`. */
  d: boolean;
}

type Escape =
  | { kind: 'char'; cp: number }
  | { kind: 'set'; set: CodePointSet; negated: boolean }
  | { kind: 'anchor'; end: boolean }
  | { kind: 'quote'; cps: number[] };

/**
 * Reads a Java pattern and writes it out for JavaScript and RE2; calls `fail` (which must throw)
 * for syntax errors and for constructs the two engines cannot be made to agree on.
 */
export function translateJavaPattern(source: string, fail: PatternFail): TranslatedPattern {
  const tree = new JavaPatternReader(source, fail).read();
  checkRepetition(tree, 1, fail);
  if (programSize(tree) > MAX_PROGRAM_SIZE) {
    fail(0, 'regular expression too large for DuckDB\'s RE2 engine', 'a smaller pattern (fewer or smaller repetitions)');
  }
  return {
    source,
    js: new RegExp(`^(?:${emit(tree, 'js')})$`, 'u'),
    re2: `(?:${emit(tree, 're2')})`,
  };
}

class JavaPatternReader {
  private i = 0;
  private depth = 0;
  private flags: Flags = { i: false, s: false, d: false };

  constructor(private readonly src: string, private readonly fail: PatternFail) {}

  read(): PatternNode {
    const tree = this.alternation();
    if (this.peek() === ')') this.fail(this.i, 'unmatched ")"', 'a "(" before it, or "\\)" for the character');
    return tree;
  }

  private peek(offset = 0): string | undefined {
    return this.src[this.i + offset];
  }

  /** The code point at the cursor, moving past it. */
  private take(): number {
    const cp = this.src.codePointAt(this.i) ?? 0;
    this.i += cp > 0xffff ? 2 : 1;
    return cp;
  }

  private alternation(): PatternNode {
    const alts = [this.sequence()];
    while (this.peek() === '|') {
      this.i++;
      alts.push(this.sequence());
    }
    return alts.length === 1 ? alts[0]! : { type: 'alt', alts };
  }

  private sequence(): PatternNode {
    const items: PatternNode[] = [];
    // `^` is only accepted where it cannot fail: before anything of a top-level alternative.
    let atStart = true;
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') break;
      const at = this.i;
      if (c === '^' || c === '$') {
        this.i++;
        this.anchor(c === '$', at, atStart);
        continue;
      }
      const atom = this.atom();
      if (atom === 'flags') continue;
      if (atom === 'start-anchor' || atom === 'end-anchor') {
        this.anchor(atom === 'end-anchor', at, atStart);
        continue;
      }
      if (Array.isArray(atom)) {
        // \Q…\E: as in Java, a quantifier after it repeats its last character only.
        const last = atom.pop();
        if (last === undefined) continue;
        atStart = false;
        items.push(...atom, this.quantified(last));
        continue;
      }
      atStart = false;
      items.push(this.quantified(atom));
    }
    return items.length === 1 ? items[0]! : { type: 'seq', items };
  }

  /**
   * Matches are whole-value, so `^` at the start and `$` at the end of the pattern (or of a
   * top-level alternative) change nothing and are accepted; anywhere else Java's line-anchor
   * rules would come into play, which the other engines do not share.
   */
  private anchor(end: boolean, at: number, atStart: boolean): void {
    const ok = this.depth === 0 && (end ? this.peek() === undefined || this.peek() === '|' : atStart);
    if (!ok) {
      this.fail(at, `anchor "${this.src.slice(at, this.i)}" is only supported at the ${end ? 'end' : 'start'} of the pattern or of a top-level alternative (matches are whole-value)`,
        end ? 'the end of the pattern or "|"' : 'the anchor first in the pattern or after a top-level "|"');
    }
  }

  /** One item of a sequence; a `\Q…\E` run comes back as a list of literals. */
  private atom(): PatternNode | PatternNode[] | 'flags' | 'start-anchor' | 'end-anchor' {
    const at = this.i;
    const c = this.peek();
    switch (c) {
      case '(':
        return this.group();
      case '[':
        return { type: 'set', set: this.characterClass() };
      case '.':
        this.i++;
        return { type: 'set', set: this.dot() };
      case '*':
      case '+':
      case '?':
        return this.fail(at, `quantifier "${c}" has nothing to repeat`, 'a character, class or group before the quantifier (use ".*" for "anything")');
      case '{':
        return this.fail(at, '"{" has nothing to repeat (after another quantifier, Java would silently ignore it)', 'a character, class or group before "{n,m}", or "\\{" for the character');
      case '\\': {
        const e = this.escape(false);
        switch (e.kind) {
          case 'char': return { type: 'set', set: this.literal(e.cp) };
          case 'set': return { type: 'set', set: this.escapeSet(e) };
          case 'anchor': return e.end ? 'end-anchor' : 'start-anchor';
          case 'quote': return e.cps.map((cp): PatternNode => ({ type: 'set', set: this.literal(cp) }));
        }
      }
      // falls through: never, every escape kind returns above
      default:
        return { type: 'set', set: this.literal(this.take()) };
    }
  }

  private literal(cp: number): CodePointSet {
    const set = CodePointSet.of(cp);
    return this.flags.i ? set.withAsciiCaseVariants() : set;
  }

  private escapeSet(e: { set: CodePointSet; negated: boolean }): CodePointSet {
    // Java folds case on the class itself, then complements: (?i)\P{Lower} matches no letter.
    const set = this.flags.i ? e.set.withAsciiCaseVariants() : e.set;
    return e.negated ? set.complement() : set;
  }

  private dot(): CodePointSet {
    if (this.flags.s) return CodePointSet.ALL;
    return (this.flags.d ? CodePointSet.of(0x0a) : LINE_TERMINATORS).complement();
  }

  private quantified(body: PatternNode): PatternNode {
    const at = this.i;
    const c = this.peek();
    let min: number;
    let max: number | null;
    if (c === '*') { min = 0; max = null; this.i++; }
    else if (c === '+') { min = 1; max = null; this.i++; }
    else if (c === '?') { min = 0; max = 1; this.i++; }
    else if (c === '{') { [min, max] = this.braces(); }
    else return body;
    if (this.peek() === '?') this.i++; // reluctant: same answer as greedy for a whole-value match
    else if (this.peek() === '+') {
      this.fail(this.i, 'possessive quantifiers ("*+", "++", "?+", "{n}+") are Java-only', 'a greedy quantifier (drop the "+"); note that greedy can match where possessive would not');
    }
    return { type: 'repeat', body, min, max, at };
  }

  private braces(): [number, number | null] {
    const at = this.i;
    const expected = '"{n}", "{n,}" or "{n,m}" with n <= m <= 1000';
    this.i++;
    const min = this.number();
    if (min === null) return this.fail(this.i, 'malformed repetition', expected);
    let max: number | null = min;
    if (this.peek() === ',') {
      this.i++;
      max = this.number();
    }
    if (this.peek() !== '}') return this.fail(this.i, 'malformed repetition', expected);
    this.i++;
    if (max !== null && max < min) this.fail(at, `repetition {${min},${max}} has its maximum below its minimum`, expected);
    if (min > MAX_REPEAT || (max ?? 0) > MAX_REPEAT) {
      this.fail(at, `repetition counts above ${MAX_REPEAT} are not supported (DuckDB's RE2 limit)`, expected);
    }
    return [min, max];
  }

  private number(): number | null {
    const m = /^[0-9]+/.exec(this.src.slice(this.i));
    if (!m) return null;
    this.i += m[0].length;
    return m[0].length > 7 ? Number.MAX_SAFE_INTEGER : Number(m[0]);
  }

  private group(): PatternNode | 'flags' {
    const at = this.i;
    this.i++; // (
    const saved = { ...this.flags };
    if (this.peek() === '?') {
      const kind = this.peek(1);
      if (kind === ':') {
        this.i += 2;
      } else if (kind === '=' || kind === '!' || (kind === '<' && (this.peek(2) === '=' || this.peek(2) === '!'))) {
        this.fail(at, `lookaround "${this.src.slice(at, this.i + (kind === '<' ? 3 : 2))}" is not supported (DuckDB's RE2 engine has none)`, 'a pattern without lookahead or lookbehind');
      } else if (kind === '>') {
        this.fail(at, 'atomic groups "(?>" are Java-only', 'a non-capturing group "(?:"');
      } else if (kind === '<') {
        const m = /^[A-Za-z][A-Za-z0-9]*>/.exec(this.src.slice(this.i + 2));
        if (!m) this.fail(this.i + 2, 'malformed group name', 'a name of ASCII letters and digits, starting with a letter, then ">"');
        this.i += 2 + m[0].length;
      } else {
        this.i++;
        if (this.flagGroup(at)) return 'flags';
      }
    }
    if (++this.depth > MAX_PATTERN_DEPTH) this.fail(at, `groups nested deeper than ${MAX_PATTERN_DEPTH}`, 'a flatter pattern');
    const body = this.alternation();
    this.depth--;
    if (this.peek() !== ')') this.fail(this.i, 'unclosed group', `")" to close the group opened at position ${at}`);
    this.i++;
    this.flags = saved;
    return body;
  }

  /**
   * Reads `idmsux-idmsux` after `(?`; returns true for `(?flags)` (which stays in force to the end
   * of the enclosing group, as in Java), false for `(?flags:` whose group follows.
   */
  private flagGroup(at: number): boolean {
    let on = true;
    for (;;) {
      const c = this.peek();
      const flagAt = this.i;
      this.i++;
      switch (c) {
        case ')': return true;
        case ':': return false;
        case '-': on = false; break;
        case 'i': this.flags.i = on; break;
        case 's': this.flags.s = on; break;
        case 'd': this.flags.d = on; break;
        case 'm': break; // MULTILINE only moves ^ and $, which are accepted only where it makes no difference
        case 'u':
          this.fail(flagAt, 'flag "u" (Unicode case folding) is not supported: the engines fold with different Unicode versions', 'flags among i, s, m, d (i folds US-ASCII letters only)');
        case 'U':
          this.fail(flagAt, 'flag "U" (Unicode character classes) is not supported', 'flags among i, s, m, d');
        case 'x':
          this.fail(flagAt, 'flag "x" (comments mode) is not supported', 'flags among i, s, m, d');
        case undefined:
          this.fail(flagAt, 'unclosed group', `")" or ":" to end the flags opened at position ${at}`);
        default:
          this.fail(flagAt, `unknown group construct "(?${c}"`, '"(?:", "(?<name>" or flags among i, s, m, d');
      }
    }
  }

  private characterClass(nesting = 0): CodePointSet {
    const open = this.i;
    if (nesting > MAX_PATTERN_DEPTH) this.fail(open, `character classes nested deeper than ${MAX_PATTERN_DEPTH}`, 'a flatter class');
    this.i++; // [
    let negated = false;
    if (this.peek() === '^') { negated = true; this.i++; }
    const operands: CodePointSet[] = [];
    let current = CodePointSet.EMPTY;
    let hasMembers = false;
    let first = true;
    for (;;) {
      const c = this.peek();
      const at = this.i;
      if (c === undefined) return this.fail(at, 'unclosed character class', `"]" to close the class opened at position ${open}`);
      if (c === ']' && !first) {
        this.i++;
        break;
      }
      first = false;
      if (c === '[') {
        current = current.union(this.characterClass(nesting + 1));
        hasMembers = true;
        continue;
      }
      if (c === '&' && this.peek(1) === '&') {
        // Java ignores an empty operand: [&&a] and [a&&] are [a].
        if (hasMembers) operands.push(current);
        current = CodePointSet.EMPTY;
        hasMembers = false;
        this.i += 2;
        continue;
      }
      current = current.union(this.classMember());
      hasMembers = true;
    }
    if (hasMembers) operands.push(current);
    if (operands.length === 0) this.fail(open, 'character class without members', 'characters, ranges or classes inside "[…]"');
    const set = operands.reduce((acc, s) => acc.intersect(s));
    return negated ? set.complement() : set;
  }

  /** A character, a range `a-z`, an escape class `\d`, or a `\Q…\E` run, inside `[…]`. */
  private classMember(): CodePointSet {
    const at = this.i;
    const lo = this.classAtom();
    if (typeof lo !== 'number') return lo;
    const next = this.peek(1);
    if (this.peek() !== '-' || next === undefined || next === ']' || next === '[') return this.literal(lo);
    this.i++; // -
    const endAt = this.i;
    const hi = this.classAtom();
    if (typeof hi !== 'number') return this.fail(endAt, 'a range cannot end with a class', 'a single character as the end of the range');
    if (hi < lo) this.fail(at, `character range ${this.src.slice(at, this.i)} is reversed`, 'a range whose end is not below its start');
    const set = CodePointSet.of([lo, hi]);
    return this.flags.i ? set.withAsciiCaseVariants() : set;
  }

  /** One code point, or a whole set for escape classes and quotes. */
  private classAtom(): number | CodePointSet {
    if (this.peek() !== '\\') return this.take();
    const at = this.i;
    const e = this.escape(true);
    switch (e.kind) {
      case 'char': return e.cp;
      case 'set': return this.escapeSet(e);
      case 'quote': return e.cps.reduce((acc, cp) => acc.union(this.literal(cp)), CodePointSet.EMPTY);
      default: return this.fail(at, 'anchors cannot appear in a character class', 'a character, range or class escape');
    }
  }

  private escape(inClass: boolean): Escape {
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

/** RE2 refuses a count above 1000, and nested counts whose product along a path exceeds 1000. */
function checkRepetition(node: PatternNode, product: number, fail: PatternFail): void {
  switch (node.type) {
    case 'seq': node.items.forEach((n) => checkRepetition(n, product, fail)); return;
    case 'alt': node.alts.forEach((n) => checkRepetition(n, product, fail)); return;
    case 'repeat': {
      // `*`, `+`, `?` count as 0, 1, 1: neutral.
      const count = node.max ?? node.min;
      const next = count > 0 ? product * count : product;
      if (next > MAX_REPEAT) {
        fail(node.at, `nested repetition counts multiply to more than ${MAX_REPEAT} (DuckDB's RE2 limit)`, 'smaller counts, or "*" / "+" for open-ended repetition');
      }
      checkRepetition(node.body, next, fail);
      return;
    }
    default: return;
  }
}

function programSize(node: PatternNode): number {
  switch (node.type) {
    case 'set': return 1 + 4 * node.set.ranges.length;
    case 'seq': return node.items.reduce((n, item) => n + programSize(item), 0);
    case 'alt': return node.alts.reduce((n, alt) => n + programSize(alt) + 1, 0);
    case 'repeat': return 1 + programSize(node.body) * Math.max(1, node.max ?? node.min + 1);
  }
}

function emit(node: PatternNode, target: 'js' | 're2'): string {
  switch (node.type) {
    case 'set': return emitSet(node.set, target);
    case 'seq': return node.items.map((n) => emit(n, target)).join('');
    case 'alt': return `(?:${node.alts.map((n) => emit(n, target)).join('|')})`;
    case 'repeat': {
      const body = node.body.type === 'set' ? emit(node.body, target) : `(?:${emit(node.body, target)})`;
      const { min, max } = node;
      const q = max === null
        ? (min === 0 ? '*' : min === 1 ? '+' : `{${min},}`)
        : (min === 0 && max === 1 ? '?' : min === max ? `{${min}}` : `{${min},${max}}`);
      return body + q;
    }
  }
}

/**
 * Code points are written as escapes so no character means anything to either engine; surrogates
 * are left out because no valid string (and no DuckDB VARCHAR) holds a lone one.
 */
function emitSet(input: CodePointSet, target: 'js' | 're2'): string {
  const set = input.minus(SURROGATES);
  const esc = (cp: number): string => (target === 'js' ? `\\u{${cp.toString(16)}}` : `\\x{${cp.toString(16)}}`);
  if (set.isEmpty) return target === 'js' ? '[]' : '[^\\x{0}-\\x{10ffff}]';
  if (set.single !== null) return esc(set.single);
  return `[${set.ranges.map(([lo, hi]) => (lo === hi ? esc(lo) : `${esc(lo)}-${esc(hi)}`)).join('')}]`;
}
