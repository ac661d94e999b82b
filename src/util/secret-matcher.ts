/**
 * Finds where any of a set of strings occurs in a text, for ./redact.ts: short strings by regular expressions of
 * bounded size, long ones by substring search (V8 refuses one giant expression, quoting every secret in its
 * message). Overlapping occurrences are all found, so two overlapping secrets are hidden together.
 */

export interface MatcherLimits {
  /** Strings longer than this are found by substring search, never compiled into a pattern. */
  regexFormChars: number;
  /** Largest source of one regular expression; more strings make more expressions. */
  patternChars: number;
}

export const MATCHER_LIMITS: MatcherLimits = { regexFormChars: 256, patternChars: 16_384 };

/** [start, end) */
type Range = readonly [number, number];

export interface SecretMatcher {
  /** Every occurrence, unsorted, possibly overlapping. Throws only on a bug or a V8 limit. */
  ranges(text: string): Range[];
}

/** A matcher for `anyCase` and `exactCase` strings; those under 4 characters are ignored (they would match everywhere). */
export function secretMatcher(anyCase: Iterable<string>, exactCase: Iterable<string>, limits: MatcherLimits = MATCHER_LIMITS): SecretMatcher {
  const usable = (set: Iterable<string>) => [...new Set(set)].filter((f) => f.length >= 4).sort((a, b) => b.length - a.length);
  const ci = usable(anyCase);
  const cs = usable(exactCase);
  const longCi = ci.filter((f) => f.length > limits.regexFormChars).map(foldCase);
  const longCs = cs.filter((f) => f.length > limits.regexFormChars);
  const regexes = [
    ...patterns(ci.filter((f) => f.length <= limits.regexFormChars), limits.patternChars, 'gi'),
    ...patterns(cs.filter((f) => f.length <= limits.regexFormChars), limits.patternChars, 'g'),
  ];
  return {
    ranges(text) {
      const out: Range[] = [];
      for (const re of regexes) {
        re.lastIndex = 0;
        for (let m = re.exec(text); m; m = re.exec(text)) {
          out.push([m.index, m.index + m[0].length]);
          re.lastIndex = m.index + 1;
        }
      }
      if (longCs.length) for (const f of longCs) occurrences(text, f, out);
      if (longCi.length) {
        const folded = foldCase(text);
        for (const f of longCi) occurrences(folded, f, out);
      }
      return out;
    },
  };
}

/** The alternations of `forms` (longest first), each source at most `maxChars` long (one form alone may exceed it). */
function patterns(forms: string[], maxChars: number, flags: string): RegExp[] {
  const out: RegExp[] = [];
  let group: string[] = [];
  let size = 0;
  for (const f of forms) {
    const escaped = f.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    if (group.length && size + escaped.length + 1 > maxChars) {
      out.push(new RegExp(group.join('|'), flags));
      group = [];
      size = 0;
    }
    group.push(escaped);
    size += escaped.length + 1;
  }
  if (group.length) out.push(new RegExp(group.join('|'), flags));
  return out;
}

function occurrences(text: string, needle: string, out: Range[]): void {
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) out.push([i, i + needle.length]);
}

/** `s` upper-cased where that keeps each character's length (positions stay positions in `s`; ß stays ß). */
function foldCase(s: string): string {
  const up = s.toUpperCase();
  // Upper-casing never shortens a character: equal lengths mean every character kept its length.
  if (up.length === s.length) return up;
  let out = '';
  for (const ch of s) {
    const u = ch.toUpperCase();
    out += u.length === ch.length ? u : ch;
  }
  return out;
}

/** `ranges` sorted and merged where they overlap or touch. */
export function mergeRanges(ranges: Range[]): Range[] {
  if (ranges.length < 2) return ranges;
  const sorted = [...ranges].sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const out: Array<[number, number]> = [[sorted[0]![0], sorted[0]![1]]];
  for (const [s, e] of sorted.slice(1)) {
    const last = out[out.length - 1]!;
    if (s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}
