/** Longest server-supplied error text kept: a broken server's 2 MB error would be stored at every failed run. */
export const MAX_ERROR_CHARS = 2_000;

/**
 * `text` cut to about `max` characters, keeping the start and the end (which often says what to do); never inside
 * a surrogate pair. Clip after redacting: a secret cut in two is no longer recognised.
 */
export function clipText(text: string, max: number = MAX_ERROR_CHARS): string {
  if (text.length <= max) return text;
  const tail = Math.min(300, Math.floor(max / 4));
  let headEnd = max - tail;
  if (isHighSurrogate(text.charCodeAt(headEnd - 1))) headEnd--;
  let tailStart = text.length - tail;
  if (isHighSurrogate(text.charCodeAt(tailStart - 1))) tailStart++;
  return `${text.slice(0, headEnd)} … [clipped: ${text.length.toLocaleString('en-US')} characters in all] … ${text.slice(tailStart)}`;
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
