const MAX_CODE_POINT = 0x10ffff;

/** A set of code points as sorted, disjoint, non-adjacent inclusive ranges. Immutable. */
export class CodePointSet {
  private constructor(readonly ranges: readonly (readonly [number, number])[]) {}

  static readonly EMPTY = new CodePointSet([]);
  static readonly ALL = new CodePointSet([[0, MAX_CODE_POINT]]);

  static of(...items: (number | readonly [number, number])[]): CodePointSet {
    return CodePointSet.fromRanges(items.map((x) => (typeof x === 'number' ? [x, x] as const : x)));
  }

  /** Sorted and merged. */
  static fromRanges(input: readonly (readonly [number, number])[]): CodePointSet {
    const sorted = [...input].filter(([lo, hi]) => lo <= hi).sort((a, b) => a[0] - b[0]);
    const out: [number, number][] = [];
    for (const [lo, hi] of sorted) {
      const last = out[out.length - 1];
      if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
      else out.push([lo, hi]);
    }
    return new CodePointSet(out);
  }

  get isEmpty(): boolean {
    return this.ranges.length === 0;
  }

  /** The only member, or `null` when the set has zero or several members. */
  get single(): number | null {
    const only = this.ranges.length === 1 ? this.ranges[0] : undefined;
    return only && only[0] === only[1] ? only[0] : null;
  }

  union(other: CodePointSet): CodePointSet {
    return CodePointSet.fromRanges([...this.ranges, ...other.ranges]);
  }

  complement(): CodePointSet {
    const out: [number, number][] = [];
    let next = 0;
    for (const [lo, hi] of this.ranges) {
      if (lo > next) out.push([next, lo - 1]);
      next = hi + 1;
    }
    if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
    return new CodePointSet(out);
  }

  intersect(other: CodePointSet): CodePointSet {
    return this.complement().union(other.complement()).complement();
  }

  minus(other: CodePointSet): CodePointSet {
    return this.intersect(other.complement());
  }

  /** With the other case of its ASCII letters: Java's CASE_INSENSITIVE without UNICODE_CASE (`(?i)é` does not match `É`). */
  withAsciiCaseVariants(): CodePointSet {
    const extra: [number, number][] = [];
    for (const [lo, hi] of this.ranges) {
      for (const [from, to, shift] of [[0x41, 0x5a, 0x20], [0x61, 0x7a, -0x20]] as const) {
        const a = Math.max(lo, from);
        const b = Math.min(hi, to);
        if (a <= b) extra.push([a + shift, b + shift]);
      }
    }
    return extra.length === 0 ? this : CodePointSet.fromRanges([...this.ranges, ...extra]);
  }
}
