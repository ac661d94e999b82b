/** Text from outside, safe to print on a terminal: control characters and BIDI_CONTROLS become U+FFFD; cut at `max`. */
export function printable(text: string, max = 300): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd').replace(BIDI_CONTROLS, '\ufffd');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/**
 * Bidirectional-text controls (a U+202E shows `exe.gnp` as `png.exe`: Trojan Source) and the line and paragraph
 * separators U+2028, U+2029 (a break where a terminal or a chat shows one).
 */
export const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;
