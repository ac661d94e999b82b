/**
 * Reads a Java pattern into a PatternNode tree: alternatives, sequences, groups and flags,
 * character classes with their ranges and intersections, quantifiers; every class, `.` and
 * case-insensitive letter turned into an explicit code-point set as it is read.
 */
import { CodePointSet } from './code-point-set.js';
import { LINE_TERMINATORS, MAX_PATTERN_DEPTH, MAX_REPEAT, PatternLexer, type PatternNode } from './java-pattern-lexer.js';

/** `*`, `+`, `?` as counts. */
const SHORT_QUANTIFIERS: Record<string, [number, number | null]> = { '*': [0, null], '+': [1, null], '?': [0, 1] };

export class JavaPatternReader extends PatternLexer {
  private depth = 0;
  /** CASE_INSENSITIVE (US-ASCII letters only, Java's default without UNICODE_CASE), DOTALL, UNIX_LINES (only `\n` ends a line). */
  private flags = { i: false, s: false, d: false };

  read(): PatternNode {
    const tree = this.alternation();
    if (this.peek() === ')') this.fail(this.i, 'unmatched ")"', 'a "(" before it, or "\\)" for the character');
    return tree;
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
        const e = this.escape({ inClass: false });
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
    const short = c === undefined ? undefined : SHORT_QUANTIFIERS[c];
    if (!short && c !== '{') return body;
    if (short) this.i++;
    const [min, max] = short ?? this.braces();
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

  /** `idmsux-idmsux` after `(?`: true for `(?flags)` (in force to the end of the enclosing group, as in Java), false for `(?flags:`. */
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
    const e = this.escape({ inClass: true });
    switch (e.kind) {
      case 'char': return e.cp;
      case 'set': return this.escapeSet(e);
      case 'quote': return e.cps.reduce((acc, cp) => acc.union(this.literal(cp)), CodePointSet.EMPTY);
      default: return this.fail(at, 'anchors cannot appear in a character class', 'a character, range or class escape');
    }
  }
}
