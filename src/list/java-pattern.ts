import { checkRepetition, emit, MAX_PROGRAM_SIZE, programSize } from './java-pattern-emit.js';
import { JavaPatternReader } from './java-pattern-reader.js';
import type { PatternFail } from './java-pattern-tree.js';

export type { PatternFail };

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
