/** The Session record schema (zod), from the field table (schema/session-fields.ts); unknown fields are dropped. */
import { z } from 'zod';
import { redact } from '../util/redact.js';
import { RecordValidationError, sessionIdOf } from './errors/record-validation-error.js';
import { RECORD_SHAPE, type FieldDef, type SessionRecord } from '../schema/session-fields.js';

/**
 * JSON may escape half a surrogate pair (`"\ud83d"`); such a string has no UTF-8 form, so DuckDB and
 * Parquet cannot store it. It is invalid, not repaired: replacing it with U+FFFD would change the
 * vendor's data without a word. (String.prototype.isWellFormed: Node 20; lib ES2023 lacks its type.)
 */
const wellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();
const LONE_SURROGATE = 'holds a lone UTF-16 surrogate (half of an emoji or other character outside the BMP, escaped as \\uD800–\\uDFFF without its pair), which UTF-8 cannot store';
const STRING = z.string().refine(wellFormed, LONE_SURROGATE);

const LEAF = {
  string: STRING.nullish(),
  integer: z.number().int().nullish(),
  boolean: z.boolean().nullish(),
};
const ID = z.string().min(1, 'must be a non-empty string').refine(wellFormed, LONE_SURROGATE);

/** The zod type of one field: `id` a non-empty string; every other field its JSON type, or null, or absent. */
function leafSchema(f: FieldDef): z.ZodType {
  if (!f.nullable) {
    if (f.json !== 'string') throw new Error(`record-schema: a non-nullable ${f.json} field (${f.path}) has no rule`);
    return ID;
  }
  return LEAF[f.json];
}

/** The record's schema, built from the field table in selection order (issues are reported in that order). */
export const SessionRecordSchema = z.object(
  Object.fromEntries(
    RECORD_SHAPE.map((n) => [
      n.name,
      n.kind === 'leaf' ? leafSchema(n.field) : z.object(Object.fromEntries(n.children.map((c) => [c.name, leafSchema(c.field)]))).nullish(),
    ]),
  ),
);

/** Validates one record; throws RecordValidationError naming the id and the first failing field. */
export function validateRecord(raw: unknown, index: number): SessionRecord {
  const result = SessionRecordSchema.safeParse(raw);
  if (result.success) return result.data as SessionRecord;
  const issue = result.error.issues[0]!;
  const path = issue.path.map(String).join('.');
  throw new RecordValidationError(sessionIdOf(raw), index, path, describeIssue(issue, valueAt(raw, issue.path)), raw);
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let cur = raw;
  for (const key of path) {
    if (cur == null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

function describeIssue(issue: z.core.$ZodIssue, received: unknown): string {
  const got = received === undefined ? ', got nothing' : `, got ${describeValue(received)}`;
  return issue.code === 'invalid_type' ? `must be ${issue.expected}${got}` : `${issue.message}${got}`;
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') {
    // Redacted before it is cut short: a cut secret would no longer be recognised, and most of it would leak.
    const r = redact(v);
    return `a string ${JSON.stringify(r.length > 40 ? r.slice(0, 40) + '…' : r)}`;
  }
  return `${typeof v} ${String(v)}`;
}
