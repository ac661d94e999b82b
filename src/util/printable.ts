/**
 * Text from outside (a browser callback, a server) made safe to print on a terminal: control
 * characters (C0, DEL, C1: escape sequences that could move the cursor, recolour or retitle the
 * terminal) and the invisible characters that reorder or split what is shown (BIDI_CONTROLS) are
 * replaced by U+FFFD, and the text is cut at `max` characters.
 */
export function printable(text: string, max = 300): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd').replace(BIDI_CONTROLS, '\ufffd');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/**
 * Bidirectional-text controls (the embeddings and overrides U+202A–U+202E, the isolates
 * U+2066–U+2069, the marks U+200E, U+200F and U+061C) and the line and paragraph separators
 * U+2028, U+2029: a U+202E in a server's error shows `exe.gnp` as `png.exe` and makes a line say
 * other than it holds (Trojan Source); a separator breaks a line where a terminal or a chat shows one.
 */
export const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;
