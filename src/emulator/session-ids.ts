/**
 * Deterministic session UUIDs that look random but decode back to (day, index), so `session(id:)`
 * and `dataset.byId()` find a record without a scan, and two sessions never share an id: (day, index)
 * goes through a keyed Feistel network (a bijection on 64 bits) and the ciphertext is spread around
 * the version and variant nibbles of an RFC 9562 version-4 UUID; the other 58 bits are a hash of it,
 * checked on decode. Keyed by the account's name too (`scope`), an id of one account does not decode
 * in another.
 */
import { hash32, mix32 } from './prng.js';

const ROUNDS = 4;

export class SessionIdCodec {
  private readonly keys: number[];
  private readonly fillerKey: number;

  /** Without `scope` (an account name): the single-account ids of earlier versions. */
  constructor(seed: number, scope?: string) {
    const extra = scope === undefined ? [] : [0x5c0e, ...Array.from(scope, (c) => c.codePointAt(0) as number)];
    this.keys = Array.from({ length: ROUNDS }, (_, i) => hash32(seed, 0x5e55, i, ...extra));
    this.fillerKey = hash32(seed, 0xf111, ...extra);
  }

  encode(day: number, index: number): string {
    let l = day >>> 0;
    let r = index >>> 0;
    for (const k of this.keys) {
      const nl = r;
      r = (l ^ mix32(r ^ k)) >>> 0;
      l = nl;
    }
    return this.format(l, r);
  }

  /** The (day, index) an id was made from, or undefined when it is not one of ours. */
  decode(id: string): { day: number; index: number } | undefined {
    if (!UUID_V4.test(id)) return undefined;
    let l = parseInt(id.slice(0, 4) + id.slice(24, 28), 16) >>> 0;
    let r = parseInt(id.slice(28, 36), 16) >>> 0;
    if (this.format(l, r) !== id) return undefined;
    for (let i = this.keys.length - 1; i >= 0; i--) {
      const k = this.keys[i] as number;
      const pl = (r ^ mix32(l ^ k)) >>> 0;
      r = l;
      l = pl;
    }
    return { day: l, index: r };
  }

  private format(l: number, r: number): string {
    const f1 = mix32(l ^ this.fillerKey);
    const f2 = mix32(r ^ f1);
    // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: ciphertext in the first 4 and last 12 hex digits.
    return (
      hex4(l >>> 16) + hex4(f1 >>> 16) + '-' + hex4(f1 & 0xffff) + '-4' + hex4(f2 >>> 16).slice(1) + '-' +
      VARIANT[f2 & 3] + hex4(f2 & 0xffff).slice(1) + '-' + hex4(l & 0xffff) + hex4(r >>> 16) + hex4(r & 0xffff)
    );
  }
}

const VARIANT = ['8', '9', 'a', 'b'] as const;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function hex4(n: number): string {
  return (HEX2[n >>> 8] as string) + (HEX2[n & 0xff] as string);
}
