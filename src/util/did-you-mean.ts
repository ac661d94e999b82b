/**
 * The known names nearest to `name` by edit distance, ignoring case (the best distance only, in their given order),
 * close meaning at most a third of the name's length, at least one edit.
 */
function closestNames(name: string, known: readonly string[]): string[] {
  const limit = Math.max(1, Math.floor(name.length / 3));
  let best = Infinity;
  let out: string[] = [];
  for (const k of new Set(known)) {
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (d > limit || d > best) continue;
    if (d < best) {
      best = d;
      out = [];
    }
    out.push(k);
  }
  return out;
}

/** ` (did you mean a or b?)`, or '' when nothing is close; `quote` wraps each name. */
export function didYouMean(name: string, known: readonly string[], quote: (s: string) => string = (s) => s): string {
  const near = closestNames(name, known);
  if (!near.length) return '';
  const names = near.slice(0, 3).map(quote);
  return ` (did you mean ${names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`}?)`;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}
