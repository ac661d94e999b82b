/** A least-recently-used cache of rendered response bodies, bounded by their total size in bytes. */
export interface CachedBody {
  chunks: Buffer[];
  bytes: number;
  /** Records in the window before any fault (for the maxResults check on a hit). */
  windowRecords: number;
  /** Records in the body. */
  records: number;
  /** The "now" the body was rendered at. */
  now: number;
  /** True when the window can no longer change as now moves forward. */
  settled: boolean;
}

export class BodyCache {
  private readonly entries = new Map<string, CachedBody>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(key: string, now: number): CachedBody | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    if (!hit.settled && hit.now !== now) {
      this.bytes -= hit.bytes;
      return undefined;
    }
    this.entries.set(key, hit);
    return hit;
  }

  set(key: string, body: CachedBody): void {
    if (body.bytes > this.maxBytes) return;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.bytes;
    }
    this.entries.set(key, body);
    this.bytes += body.bytes;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= v.bytes;
    }
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
