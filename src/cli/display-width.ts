/** Terminal columns of a string (string-width's: a CJK character or emoji takes two, a combining mark none); cut by grapheme. */
import stringWidth from 'string-width';

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

export function displayWidth(s: string): number {
  return stringWidth(s);
}

/** `s` padded with spaces to `width` columns. */
export function padToWidth(s: string, width: number): string {
  return s + ' '.repeat(Math.max(0, width - displayWidth(s)));
}

/** `s` cut to at most `width` columns, ending in `…` when cut (never inside a grapheme). */
export function truncateToWidth(s: string, width: number): string {
  if (displayWidth(s) <= width) return s;
  let out = '';
  let w = 0;
  for (const { segment } of segmenter.segment(s)) {
    const gw = stringWidth(segment);
    if (w + gw > width - 1) break;
    out += segment;
    w += gw;
  }
  return out + '…';
}
