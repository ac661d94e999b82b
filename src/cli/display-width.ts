/**
 * How many terminal columns a string takes, for tables that line up whatever the text: a CJK
 * character or an emoji (keycaps and flags too) takes two columns, a combining mark or a zero-width
 * joiner none. The widths are string-width's (Unicode's East Asian Width and the emoji data, kept
 * current by its maintainers); cutting goes by grapheme (what a terminal draws as one character).
 */
import stringWidth from 'string-width';

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Columns `s` takes on a terminal. */
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
