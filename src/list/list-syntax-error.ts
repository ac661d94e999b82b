type Problem = { parameter: string; input: string; position: number | null; expected: string; problem: string };

/**
 * Thrown by `parseListRequest` when a list parameter cannot be read, or asks for something the two
 * evaluators could not answer identically (e.g. a Java-only regular expression construct).
 * `position` is 0-based in UTF-16 code units into `input` (the value as the caller gave it), `null`
 * when the whole value is at fault; the message repeats it all with a caret under it, ready to print.
 */
export class ListSyntaxError extends Error {
  override readonly name = 'ListSyntaxError';
  readonly parameter: string;
  readonly input: string;
  readonly position: number | null;
  /** What would have been accepted at `position`, e.g. `"=" or "!="`. */
  readonly expected: string;

  constructor(options: Problem) {
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

function formatMessage(o: Problem): string {
  if (o.position === null) return `${o.parameter}: ${o.problem}; expected ${o.expected}`;
  // Control characters would shift the caret.
  const shown = o.input.replace(/[\u0000-\u001f\u007f]/g, ' ');
  return `${o.parameter}: ${o.problem} at position ${o.position}; expected ${o.expected}\n  ${shown}\n  ${' '.repeat(o.position)}^`;
}
