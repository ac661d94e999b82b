/**
 * Reads a `sessions` body without an object per record: the fast path scans the bytes of the shape a
 * server sends for our query (fields in the order selected, as GraphQL orders them), checks each record,
 * and turns the list into NDJSON in place (each separating comma becomes a newline); only the ids are
 * allocated. Anything else takes the slow path: JSON.parse, then the precise validator (record-schema.ts).
 */
import { isUtf8 } from 'node:buffer';
import { GraphQLResponseError, type GraphQLErrorEntry } from './errors/graphql-response-error.js';
import { InvalidResponseError } from './errors/invalid-response-error.js';
import { TransientError } from './errors/transient-error.js';
import { RECORD_SHAPE, type FieldDef } from '../schema/session-fields.js';
import { MAX_RECORD_BYTES } from './record-size.js';

export type SessionsBody =
  /** Every record checked: `ndjson` holds one record per line (a view of the body's bytes). */
  | { kind: 'ndjson'; ndjson: Buffer; count: number; /** The body's length, bytes (what the answer holds). */ bytes: number }
  /** The records as parsed: validate them one by one. */
  | { kind: 'records'; records: unknown[]; /** The body's length, bytes (the records parsed from it hold more). */ bytes: number };

type FieldKind = 'id' | 'str' | 'int' | 'bool' | 'obj';
interface FieldSpec {
  /** `"name":` as bytes, after a comma for every field but the first. */
  token: Buffer;
  kind: FieldKind;
  fields?: FieldSpec[];
}

const enc = (s: string) => Buffer.from(s, 'utf8');
function spec(fields: Array<[string, FieldKind, FieldSpec[]?]>): FieldSpec[] {
  return fields.map(([name, kind, nested], i) => ({ token: enc(`${i ? ',' : ''}"${name}":`), kind, ...(nested ? { fields: nested } : {}) }));
}

function kindOf(f: FieldDef): FieldKind {
  if (!f.nullable) return 'id';
  return f.json === 'string' ? 'str' : f.json === 'integer' ? 'int' : 'bool';
}

/** The selection of src/reporting/query.ts, in its order: both come from schema/session-fields.ts. */
const RECORD = spec(
  RECORD_SHAPE.map((n): [string, FieldKind, FieldSpec[]?] =>
    n.kind === 'leaf' ? [n.name, kindOf(n.field)] : [n.name, 'obj', spec(n.children.map((c) => [c.name, kindOf(c.field)]))],
  ),
);

const PREFIX = enc('{"data":{"sessions":[');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** SESSION_ETL_BODY_SCANNER=off sends every body down the slow path (the benchmark compares both). */
const SCANNER_ON = process.env.SESSION_ETL_BODY_SCANNER !== 'off';

/** Thrown inside the scanner: the body is not in the fast shape (or not complete); the slow path decides. */
const NOT_FAST = Symbol('not-fast');

/**
 * Records ready for DuckDB, records to validate one by one, or an error (GraphQLResponseError,
 * InvalidResponseError, TransientError 'incomplete-body'). `body` is modified in place on the fast path.
 */
export function readSessionsBody(body: Buffer, what: string): SessionsBody {
  const fast = SCANNER_ON ? scan(body) : undefined;
  if (fast) return fast;
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw TransientError.incompleteBody(err as Error);
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new InvalidResponseError(`the reporting endpoint answered with a body that is not a GraphQL response (${what})`);
  }
  const { data, errors } = payload as { data?: unknown; errors?: unknown };
  if (errors !== undefined && errors !== null) {
    const list = Array.isArray(errors) ? (errors as GraphQLErrorEntry[]) : [{ message: String(errors) }];
    throw new GraphQLResponseError(list, data ?? null);
  }
  const sessions = (data as { sessions?: unknown } | null | undefined)?.sessions;
  if (!Array.isArray(sessions)) {
    throw new InvalidResponseError(`the reporting endpoint answered without a data.sessions list for ${what}`);
  }
  return { kind: 'records', records: sessions, bytes: body.length };
}

/** undefined when the body is not in the fast shape. */
function scan(b: Buffer): SessionsBody | undefined {
  if (b.length < PREFIX.length + 3 || !startsWith(b, 0, PREFIX)) return undefined;
  let p = PREFIX.length;
  const first = p;
  const separators: number[] = [];
  const ids = new Set<string>();
  try {
    if (b[p] !== 0x5d) {
      for (;;) {
        const start = p;
        p = record(b, p, ids);
        // An over-size record takes the precise path, which names it (record-size.ts).
        if (p - start > MAX_RECORD_BYTES) throw NOT_FAST;
        const c = b[p];
        if (c === 0x5d) break;
        if (c !== 0x2c) throw NOT_FAST;
        separators.push(p);
        p++;
      }
    }
    const last = p; // the closing ']'
    if (b[p + 1] !== 0x7d || b[p + 2] !== 0x7d) throw NOT_FAST;
    for (let i = p + 3; i < b.length; i++) {
      const c = b[i];
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) throw NOT_FAST;
    }
    // JSON.parse refuses raw control characters and replaces bytes that are not UTF-8; DuckDB's
    // reader would instead fail the commit. The fast shape has no whitespace between tokens, so any
    // byte below 0x20 up to the closing ']' sits inside a string: both go to the slow path.
    if (hasControlByte(b, first, last)) throw NOT_FAST;
    if (!isUtf8(b)) throw NOT_FAST;
    // DuckDB's reader refuses an unknown escape or a lone surrogate (\ud83d without its pair) when
    // it merges the file, long after the commit: the slow path names the session and the field.
    if (!escapesValid(b, first, last)) throw NOT_FAST;
    for (const s of separators) b[s] = 0x0a;
    return { kind: 'ndjson', ndjson: b.subarray(first, last), count: ids.size, bytes: b.length };
  } catch (err) {
    if (err === NOT_FAST) return undefined;
    throw err;
  }
}

/**
 * Whether any byte of b[from, to) is below 0x20, four bytes at a time (half the scanner's time went
 * to the byte-by-byte loop): for a 32-bit word x, (x - 0x20202020) & ~x & 0x80808080 is non-zero
 * exactly when one of its bytes is below 0x20, whatever the byte order.
 */
export function hasControlByte(b: Buffer, from: number, to: number): boolean {
  let i = from;
  while (i < to && ((b.byteOffset + i) & 3) !== 0) if (b[i++]! < 0x20) return true;
  const words = (to - i) >>> 2;
  if (words > 0) {
    const u = new Uint32Array(b.buffer, b.byteOffset + i, words);
    for (let k = 0; k < words; k++) {
      const x = u[k]!;
      if (((x - 0x20202020) & ~x & 0x80808080) !== 0) return true;
    }
    i += words << 2;
  }
  while (i < to) if (b[i++]! < 0x20) return true;
  return false;
}

const HEX_VALUE = new Int8Array(256).fill(-1);
for (let i = 0; i < 16; i++) HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = HEX_VALUE['0123456789ABCDEF'.charCodeAt(i)] = i;
/** The value of the four hex digits at b[p..p+4), or -1. */
function hex4(b: Buffer, p: number): number {
  const a = HEX_VALUE[b[p]!]!, c = HEX_VALUE[b[p + 1]!]!, d = HEX_VALUE[b[p + 2]!]!, e = HEX_VALUE[b[p + 3]!]!;
  return (a | c | d | e) < 0 ? -1 : (a << 12) | (c << 8) | (d << 4) | e;
}

/**
 * Whether every escape in b[from, to) is one JSON defines and every \u escape of a UTF-16
 * surrogate is half of a pair. In the fast shape a backslash only occurs inside strings, so the
 * escapes are read left to right from each backslash (`\\` consumes both).
 */
export function escapesValid(b: Buffer, from: number, to: number): boolean {
  let i = b.indexOf(BACKSLASH, from);
  while (i >= 0 && i < to) {
    const c = b[i + 1];
    if (c === 0x75) {
      const u = hex4(b, i + 2);
      if (u < 0) return false;
      if (u >= 0xd800 && u <= 0xdfff) {
        // A high surrogate must be followed by an escaped low one; a low one alone is lone.
        if (u >= 0xdc00 || b[i + 6] !== BACKSLASH || b[i + 7] !== 0x75) return false;
        const low = hex4(b, i + 8);
        if (low < 0xdc00 || low > 0xdfff) return false;
        i += 12;
      } else i += 6;
    } else if (c === QUOTE || c === BACKSLASH || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) i += 2;
    else return false;
    i = b.indexOf(BACKSLASH, i);
  }
  return true;
}

function startsWith(b: Buffer, at: number, token: Buffer): boolean {
  if (at + token.length > b.length) return false;
  for (let i = 0; i < token.length; i++) if (b[at + i] !== token[i]) return false;
  return true;
}

/** One record starting at `p` (`{`): the position after its `}`. */
function record(b: Buffer, p: number, ids: Set<string>): number {
  if (b[p] !== 0x7b) throw NOT_FAST;
  p++;
  for (const f of RECORD) {
    if (!startsWith(b, p, f.token)) throw NOT_FAST;
    p += f.token.length;
    if (f.kind === 'id') {
      if (b[p] !== QUOTE || b[p + 1] === QUOTE) throw NOT_FAST;
      const end = stringEnd(b, p);
      // An escaped id (\u0041…) could spell an id seen before differently: the slow path decodes it.
      for (let i = p + 1; i < end; i++) if (b[i] === BACKSLASH) throw NOT_FAST;
      const id = b.toString('latin1', p + 1, end);
      if (ids.has(id)) throw NOT_FAST;
      ids.add(id);
      p = end + 1;
    } else {
      p = value(b, p, f);
    }
  }
  if (b[p] !== 0x7d) throw NOT_FAST;
  return p + 1;
}

function value(b: Buffer, p: number, f: FieldSpec): number {
  const c = b[p];
  if (c === 0x6e) {
    if (b[p + 1] === 0x75 && b[p + 2] === 0x6c && b[p + 3] === 0x6c) return p + 4;
    throw NOT_FAST;
  }
  switch (f.kind) {
    case 'str':
      if (c !== QUOTE) throw NOT_FAST;
      return stringEnd(b, p) + 1;
    case 'int': {
      let q = p;
      if (b[q] === 0x2d) q++;
      const start = q;
      while (q < b.length && b[q]! >= 0x30 && b[q]! <= 0x39) q++;
      const digits = q - start;
      // Leading zeros are not JSON; more than 15 digits may leave the safe-integer range.
      if (digits === 0 || digits > 15 || (digits > 1 && b[start] === 0x30)) throw NOT_FAST;
      const t = b[q];
      if (t !== 0x2c && t !== 0x7d) throw NOT_FAST;
      return q;
    }
    case 'bool':
      if (c === 0x74 && b[p + 1] === 0x72 && b[p + 2] === 0x75 && b[p + 3] === 0x65) return p + 4;
      if (c === 0x66 && b[p + 1] === 0x61 && b[p + 2] === 0x6c && b[p + 3] === 0x73 && b[p + 4] === 0x65) return p + 5;
      throw NOT_FAST;
    case 'obj': {
      if (c !== 0x7b) throw NOT_FAST;
      p++;
      for (const g of f.fields!) {
        if (!startsWith(b, p, g.token)) throw NOT_FAST;
        p = value(b, p + g.token.length, g);
      }
      if (b[p] !== 0x7d) throw NOT_FAST;
      return p + 1;
    }
    default:
      throw NOT_FAST;
  }
}

function stringEnd(b: Buffer, p: number): number {
  let q = p;
  for (;;) {
    q = b.indexOf(QUOTE, q + 1);
    if (q < 0) throw NOT_FAST;
    let k = q - 1;
    while (b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q;
  }
}
