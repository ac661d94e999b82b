/**
 * An append-only writer of JSON as UTF-8 bytes: the generator writes each record straight into a
 * day's buffer (per-record strings cost several times more, most of it in garbage collection).
 * Callers compose the JSON from pre-encoded fragments and from values that need no escaping (digits,
 * hex, ASCII ids), so every byte is as JSON.stringify would write it.
 */
const DIGITS = '0123456789abcdef';
const encoder = new TextEncoder();

/** The UTF-8 bytes of a piece of JSON text written as is (keys, punctuation). */
export function fragment(text: string): Uint8Array {
  return encoder.encode(text);
}

/** The UTF-8 bytes of JSON.stringify(value). */
export function jsonFragment(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** The UTF-8 bytes of a string's JSON escaping without the surrounding quotes. */
export function innerFragment(value: string): Uint8Array {
  return encoder.encode(JSON.stringify(value).slice(1, -1));
}

export class JsonBytes {
  bytes: Buffer;
  length = 0;

  constructor(capacity: number) {
    this.bytes = Buffer.allocUnsafe(Math.max(64, capacity));
  }

  /** Makes room for at least `n` more bytes. */
  private reserve(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.length + n));
    this.bytes.copy(bigger, 0, 0, this.length);
    this.bytes = bigger;
  }

  raw(b: Uint8Array): void {
    this.reserve(b.length);
    const out = this.bytes;
    let p = this.length;
    for (let i = 0; i < b.length; i++) out[p++] = b[i] as number;
    this.length = p;
  }

  byte(c: number): void {
    this.reserve(1);
    this.bytes[this.length++] = c;
  }

  /** Characters below U+0080 that JSON leaves alone (no quote, backslash or control character). */
  ascii(s: string): void {
    this.reserve(s.length);
    const out = this.bytes;
    let p = this.length;
    for (let i = 0; i < s.length; i++) out[p++] = s.charCodeAt(i);
    this.length = p;
  }

  /** A quoted `ascii` string. */
  quoted(s: string): void {
    this.byte(0x22);
    this.ascii(s);
    this.byte(0x22);
  }

  null(): void {
    this.ascii('null');
  }

  /** A safe integer in decimal. */
  int(n: number): void {
    if (n < 0) {
      this.byte(0x2d);
      n = -n;
    }
    this.padded(n, 1);
  }

  /** A non-negative integer in decimal (or lowercase hexadecimal), left-padded with zeros to `width` digits. */
  padded(n: number, width: number, base = 10): void {
    let digits = 1;
    for (let x = n; x >= base; x = Math.floor(x / base)) digits++;
    const total = Math.max(width, digits);
    this.reserve(total);
    const out = this.bytes;
    let p = this.length + total;
    this.length = p;
    for (let k = 0; k < total; k++) {
      out[--p] = DIGITS.charCodeAt(n % base);
      n = Math.floor(n / base);
    }
  }
}
