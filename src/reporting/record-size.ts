/**
 * DuckDB's JSON reader refuses a line longer than its `maximum_object_size`, and reads committed
 * records at every merge: one it cannot read would fail every later merge. So nothing larger than
 * MAX_RECORD_BYTES is accepted, and the reader is given twice that (store/ndjson.ts).
 */
import { RecordValidationError, sessionIdOf } from './errors/record-validation-error.js';

/** Largest record accepted, as JSON bytes (a real one is a few hundred). */
export const MAX_RECORD_BYTES = 8 * 1024 * 1024;

/** How much of an over-size record is kept for quarantine. */
const KEPT_BYTES = 1024;

/** RecordValidationError when `raw` is larger than `limit` as JSON; its `record` is a truncated copy, for quarantine. */
export function checkRecordSize(raw: unknown, index: number, limit = MAX_RECORD_BYTES): void {
  // Cheap bound first: JSON of the record is at most 6 bytes per UTF-16 unit of its strings plus
  // its structure; only a record that may be near the limit is serialised.
  if (stringUnits(raw, 0) * 6 + 4096 <= limit) return;
  const json = JSON.stringify(raw) ?? '';
  const size = Buffer.byteLength(json, 'utf8');
  if (size <= limit) return;
  throw new RecordValidationError(
    sessionIdOf(raw),
    index,
    '',
    `is ${size} bytes of JSON, over the limit of ${limit} bytes per record (no session field is that long: the server sent something else)`,
    { truncated: true, bytes: size, start: json.slice(0, KEPT_BYTES) },
  );
}

function stringUnits(v: unknown, depth: number): number {
  if (typeof v === 'string') return v.length;
  if (!v || typeof v !== 'object' || depth > 8) return v && typeof v === 'object' ? Infinity : 8;
  let n = 0;
  for (const [k, x] of Object.entries(v)) n += k.length + 2 + stringUnits(x, depth + 1);
  return n;
}
