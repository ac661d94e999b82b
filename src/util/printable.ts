/**
 * Text from outside (a browser callback, a server) made safe to print on a terminal: control
 * characters (C0, DEL, C1: escape sequences that could move the cursor, recolour or retitle the
 * terminal) are replaced by U+FFFD, and the text is cut at `max` characters.
 */
export function printable(text: string, max = 300): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}
