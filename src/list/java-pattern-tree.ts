/**
 * The tree a Java pattern is read into (java-pattern-reader.ts) and written out from
 * (java-pattern-emit.ts), and the limits both ends keep to.
 */
import type { CodePointSet } from './code-point-set.js';

/** Reports a problem at `index` (into the pattern) and does not return. */
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
