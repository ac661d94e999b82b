import { translateJavaPattern, type TranslatedPattern } from './java-pattern.js';
import { resolveField, type LeafField } from './session-fields.js';

/** A field as a request names it; `field` is `null` for a name no session field has (counts as null). */
export interface FieldRef {
  readonly name: string;
  readonly field: LeafField | null;
}

/** `match` is `field="regex"` (or `!=`): the field's text ('' when absent or null) matched whole. */
export type FilterExpr =
  | { readonly type: 'match'; readonly field: FieldRef; readonly negated: boolean; readonly pattern: TranslatedPattern }
  | { readonly type: 'and'; readonly operands: readonly FilterExpr[] }
  | { readonly type: 'or'; readonly operands: readonly FilterExpr[] };

type FilterFail = (position: number, problem: string, expected: string) => never;

/** Deepest parenthesis nesting accepted, so a hostile filter cannot exhaust the stack. */
const MAX_FILTER_DEPTH = 64;

/**
 * Reads a filter expression:
 *
 * ```
 * expr   := and ("|" and)*
 * and    := factor ("&" factor)*          & binds tighter than |
 * factor := "(" expr ")" | field ("=" | "!=") '"' regex '"'
 * field  := [A-Za-z0-9_.]+               case-sensitive; interface name or contract column
 * ```
 * Spaces, tabs and line breaks may separate tokens. The regular expression runs to the next
 * double quote: it cannot contain one (write `\x22`).
 */
export function parseFilter(text: string, fail: FilterFail): FilterExpr {
  return new FilterReader(text, fail).read();
}

class FilterReader {
  private i = 0;
  private depth = 0;

  constructor(private readonly text: string, private readonly fail: FilterFail) {}

  read(): FilterExpr {
    const expr = this.or();
    this.skipSpace();
    if (this.i < this.text.length) {
      const c = this.text[this.i];
      this.fail(this.i, c === ')' ? 'unmatched ")"' : `unexpected "${c}"`, '"&", "|" or the end of the filter');
    }
    return expr;
  }

  private skipSpace(): void {
    while (this.i < this.text.length && ' \t\r\n'.includes(this.text[this.i]!)) this.i++;
  }

  private or(): FilterExpr {
    return this.joined('|', 'or', () => this.joined('&', 'and', () => this.factor()));
  }

  /** `operand (op operand)*`: the operand alone, or all of them under `type`. */
  private joined(op: string, type: 'or' | 'and', operand: () => FilterExpr): FilterExpr {
    const operands = [operand()];
    for (this.skipSpace(); this.text[this.i] === op; this.skipSpace()) {
      this.i++;
      operands.push(operand());
    }
    return operands.length === 1 ? operands[0]! : { type, operands };
  }

  private factor(): FilterExpr {
    this.skipSpace();
    const open = this.i;
    if (this.text[this.i] === '(') {
      if (++this.depth > MAX_FILTER_DEPTH) this.fail(open, `parentheses nested deeper than ${MAX_FILTER_DEPTH}`, 'a flatter expression');
      this.i++;
      const inner = this.or();
      this.skipSpace();
      if (this.text[this.i] !== ')') this.fail(this.i, 'unclosed "("', `")" to close the parenthesis at position ${open}`);
      this.i++;
      this.depth--;
      return inner;
    }
    return this.match();
  }

  private match(): FilterExpr {
    const start = this.i;
    const name = /^[A-Za-z0-9_.]*/.exec(this.text.slice(start))![0];
    if (name === '') {
      const c = this.text[start];
      this.fail(start, c === undefined ? 'the filter ends here' : `unexpected "${c}"`, 'a field name (letters, digits, "." and "_") or "("');
    }
    this.i += name.length;
    const resolved = resolveField(name);
    if (resolved?.kind === 'object') {
      this.fail(start, `"${name}" is an object, not a value`, `one of its fields: ${resolved.children.map((c) => c.path).join(', ')}`);
    }
    this.skipSpace();
    const negated = this.text.startsWith('!=', this.i);
    if (negated || this.text[this.i] === '=') this.i += negated ? 2 : 1;
    else {
      const c = this.text[this.i];
      this.fail(this.i, c === undefined ? `the filter ends after the field name "${name}"` : `unexpected "${c}" after the field name "${name}"`, '"=" or "!="');
    }
    this.skipSpace();
    if (this.text[this.i] !== '"') {
      this.fail(this.i, 'the regular expression is not quoted', 'a regular expression in double quotes, e.g. ".*@example\\.com"');
    }
    const quote = this.i;
    const close = this.text.indexOf('"', quote + 1);
    if (close < 0) {
      this.fail(this.text.length, `the regular expression opened at position ${quote} has no closing quote`, '"\\"" (a regular expression cannot contain a double quote: write \\x22)');
    }
    const source = this.text.slice(quote + 1, close);
    const pattern = translateJavaPattern(source, (index, problem, expected) =>
      this.fail(quote + 1 + index, `${problem} (regular expression)`, expected));
    this.i = close + 1;
    return { type: 'match', field: { name, field: resolved }, negated, pattern };
  }
}

/** Every field name the filter uses, in order of appearance. */
export function filterFieldRefs(expr: FilterExpr): FieldRef[] {
  return expr.type === 'match' ? [expr.field] : expr.operands.flatMap(filterFieldRefs);
}
