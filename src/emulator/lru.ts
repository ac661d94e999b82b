/** A least-recently-used map bounded by the total cost of its entries (their bytes, or 1 each by default). */
export class Lru<K, V> {
  private readonly entries = new Map<K, { value: V; cost: number }>();
  private total = 0;

  constructor(readonly maxCost: number, private readonly costOf: (value: V) => number = () => 1) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit.value;
  }

  /** Adds the entry and drops the least recently used others while over the bound (never the new one). */
  set(key: K, value: V): void {
    this.delete(key);
    const cost = this.costOf(value);
    this.entries.set(key, { value, cost });
    this.total += cost;
    for (const [k, v] of this.entries) {
      if (this.total <= this.maxCost || k === key) break;
      this.entries.delete(k);
      this.total -= v.cost;
    }
  }

  delete(key: K): void {
    const old = this.entries.get(key);
    if (!old) return;
    this.entries.delete(key);
    this.total -= old.cost;
  }

  clear(): void {
    this.entries.clear();
    this.total = 0;
  }
}
