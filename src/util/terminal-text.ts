/** Text from outside made safe to show on a terminal or in a chat message, whole (./printable.ts also cuts it). */
import { BIDI_CONTROLS, printable } from './printable.js';

/** `text` on one line: line breaks and tabs become a space, other control characters U+FFFD. */
export function oneLine(text: string): string {
  return printable(text.replace(/[\t\n\r]+/g, ' '), Infinity);
}

/** `text` keeping its line breaks (a message of several lines), other control characters U+FFFD. */
export function printableLines(text: string): string {
  return text
    .split('\n')
    .map((line) => printable(line.replace(/\t/g, ' '), Infinity))
    .join('\n');
}

/** `text` with its bidirectional-text controls written as `\u202e` escapes: for JSON log lines, which stay valid JSON. */
export function escapeBidi(text: string): string {
  return text.replace(BIDI_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
