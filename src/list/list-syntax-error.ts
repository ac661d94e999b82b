/**
 * Thrown by `parseListRequest` when a list parameter cannot be read, or asks for something the
 * two evaluators could not answer identically (for example a Java-only regular expression construct).
 *
 * It carries the parameter, the text that was read, the position of the problem in that text
 * (0-based, in UTF-16 code units, like JavaScript string indices; `null` when the whole value is
 * at fault) and a short phrase saying what was expected there. The message repeats them with a
 * caret under the position, ready to print.
 */
export class ListSyntaxError extends Error {
  override readonly name = 'ListSyntaxError';
  /** The list parameter at fault, e.g. `filter`, `ascending`, `pageSize`. */
  readonly parameter: string;
  /** The parameter value as it was read (after percent-decoding). */
  readonly input: string;
  /** 0-based index into `input`, or `null` when the whole value is at fault. */
  readonly position: number | null;
  /** What would have been accepted at `position`, e.g. `"=" or "!="`. */
  readonly expected: string;

  constructor(options: { parameter: string; input: string; position: number | null; expected: string; problem: string }) {
    super(formatMessage(options));
    this.parameter = options.parameter;
    this.input = options.input;
    this.position = options.position;
    this.expected = options.expected;
  }
}

export function isListSyntaxError(error: unknown): error is ListSyntaxError {
  return error instanceof ListSyntaxError;
}

function formatMessage(o: { parameter: string; input: string; position: number | null; expected: string; problem: string }): string {
  if (o.position === null) return `${o.parameter}: ${o.problem}; expected ${o.expected}`;
  // Show the input on one line with a caret under the position; control characters would shift the caret.
  const shown = o.input.replace(/[\u0000-\u001f\u007f]/g, ' ');
  return `${o.parameter}: ${o.problem} at position ${o.position}; expected ${o.expected}\n  ${shown}\n  ${' '.repeat(o.position)}^`;
}
