/** Small, fast, seedable pseudo-random numbers: the same inputs give the same numbers on every platform. */

/** A 32-bit integer hash with good avalanche (the finaliser of MurmurHash3 with splitmix constants). */
export function mix32(x: number): number {
  let z = x | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** Folds a list of integers (any size up to 2^53) into one 32-bit hash. */
export function hash32(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    const lo = p >>> 0;
    const hi = Math.floor(p / 0x1_0000_0000) >>> 0;
    h = mix32(h ^ lo);
    h = mix32((h + 0x6a09e667) ^ hi);
  }
  return h;
}

/**
 * sfc32 (Chris Doty-Humphrey's Small Fast Counting generator): 128 bits of state, so the
 * outputs of one stream do not repeat or collide the way a 32-bit-state generator's would.
 */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** Seeds the four state words from independent hashes of `parts`, then discards a few outputs. */
  constructor(...parts: number[]) {
    this.a = hash32(0x243f6a88, ...parts);
    this.b = hash32(0x85a308d3, ...parts);
    this.c = hash32(0x13198a2e, ...parts);
    this.d = 1;
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** In [0, 1). */
  next(): number {
    return this.nextUint32() / 0x1_0000_0000;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** Standard normal variate (Box–Muller, one of the pair). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}

/** Picks an index from cumulative weights (ascending, last element = total). */
export function pickCumulative(rng: Random, cumulative: readonly number[]): number {
  const x = rng.next() * (cumulative[cumulative.length - 1] as number);
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((cumulative[mid] as number) > x) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

export function cumulativeOf(weights: readonly number[]): number[] {
  let sum = 0;
  return weights.map((w) => (sum += w));
}
