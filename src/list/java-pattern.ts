import type { CodePointSet } from './code-point-set.js';
import { MAX_REPEAT, SURROGATES, type PatternFail, type PatternNode } from './java-pattern-lexer.js';
import { JavaPatternReader } from './java-pattern-reader.js';

/**
 * A filter's regular expression: Java `Pattern` syntax, read into a small tree and written out for
 * JavaScript `RegExp` (`u` flag) and RE2 (DuckDB's `regexp_full_match`), whole-value as Java's
 * `Matcher.matches()`. Every class, `.`, `\d`, `(?i)` … becomes explicit code-point sets, so the
 * engines' own ideas of `.`, `\s`, case folding or Unicode never come into play; what cannot mean
 * the same in both is rejected with its position (docs/list-conventions.md, "Regular expressions").
 */
export interface TranslatedPattern {
  readonly source: string;
  /** For the in-memory evaluator: anchored at both ends, `u` flag. */
  readonly js: RegExp;
  /** For DuckDB: pass to `regexp_full_match(text, pattern)` (which anchors it). */
  readonly re2: string;
}

/** Calls `fail` (which must throw) for syntax errors and for constructs the two engines cannot be made to agree on. */
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

/** Rough instruction budget, well below where DuckDB's RE2 gives up with "pattern too large". */
const MAX_PROGRAM_SIZE = 100_000;

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
