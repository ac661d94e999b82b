/** Sorting's comparisons in memory; `compileToSql` writes the same order (docs/list-conventions.md, "Sorting"). */

/**
 * By code point, the byte order of UTF-8 and so DuckDB's binary collation (JavaScript's `<`
 * compares UTF-16 code units, which puts U+E000–U+FFFF after the supplementary characters).
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (D800–DFFF) encode code points above FFFF: move them above E000–FFFF.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** US-ASCII letters to lower case, nothing else (what SQL's `translate(s, 'A…Z', 'a…z')` does). */
export function asciiLowerCase(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/**
 * US-ASCII letters without case, everything else by code point, ties by code point (`A` before
 * `a`): a total order standing in for "locale-sensitive", which both evaluators cannot reproduce.
 */
export function compareStrings(a: string, b: string): number {
  return compareCodePoints(asciiLowerCase(a), asciiLowerCase(b)) || compareCodePoints(a, b);
}

/** Rank of a value's type when two values of different types meet (never among session fields). */
function typeRank(v: unknown): number {
  if (v === null || v === undefined) return 0;
  switch (typeof v) {
    case 'boolean': return 1;
    case 'number':
    case 'bigint': return 2;
    case 'string': return 3;
    default: return Array.isArray(v) ? 4 : 5;
  }
}

/**
 * The document's rules, ascending: null (or a field that does not exist) first; false before true;
 * arrays shorter first, then by their items sorted; different types by `typeRank`.
 */
export function compareValues(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0: return 0;
    case 1: return a === b ? 0 : a ? 1 : -1;
    case 2: return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 3: return compareStrings(a as string, b as string);
    case 4: {
      const x = a as unknown[];
      const y = b as unknown[];
      if (x.length !== y.length) return x.length < y.length ? -1 : 1;
      const xs = [...x].sort(compareValues);
      const ys = [...y].sort(compareValues);
      for (let i = 0; i < xs.length; i++) {
        const c = compareValues(xs[i], ys[i]);
        if (c !== 0) return c;
      }
      return 0;
    }
    default: return 0;
  }
}
