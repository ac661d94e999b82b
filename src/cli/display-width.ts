/**
 * How many terminal columns a string takes, for tables that line up whatever the text: a CJK
 * character or an emoji takes two columns, a combining mark or a zero-width joiner none. Counted per
 * grapheme (what a terminal draws as one character), so an emoji sequence joined by U+200D or a
 * letter with its accents counts once.
 */

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** East Asian Wide and Fullwidth blocks (Unicode's EastAsianWidth W and F, by block). */
const WIDE = /[\u1100-\u115f\u231a\u231b\u2329\u232a\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe10-\ufe19\ufe30-\ufe6f\uff00-\uff60\uffe0-\uffe6\u{16fe0}-\u{18aff}\u{1b000}-\u{1b2ff}\u{1f200}-\u{1f2ff}\u{20000}-\u{3fffd}]/u;
/** Shown as an emoji (two columns): emoji presentation by default, or asked for with U+FE0F. */
const EMOJI = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\ufe0f/u;
/** Takes no column: combining marks, format characters (joiners, variation selectors), controls. */
const ZERO = /^[\p{Mn}\p{Me}\p{Cf}\p{Cc}]*$/u;

function graphemeWidth(g: string): number {
  if (ZERO.test(g)) return 0;
  return WIDE.test(g) || EMOJI.test(g) ? 2 : 1;
}

/** Columns `s` takes on a terminal. */
export function displayWidth(s: string): number {
  // Plain ASCII (the usual cell) needs no segmenting.
  if (/^[\x20-\x7e]*$/.test(s)) return s.length;
  let w = 0;
  for (const { segment } of segmenter.segment(s)) w += graphemeWidth(segment);
  return w;
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
    const gw = graphemeWidth(segment);
    if (w + gw > width - 1) break;
    out += segment;
    w += gw;
  }
  return out + '…';
}
