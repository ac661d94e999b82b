/**
 * The one shape committed records take (NDJSON, one record a line: the scanner's, or `recordLine`'s),
 * and how DuckDB reads it: read_json's explicit column types (no sampling; a misfit value is an
 * error) and the select list onto the contract, derived from schema/session-fields.ts.
 */
import { RECORD_SHAPE, type FieldDef, type SessionRecord } from '../schema/session-fields.js';
import { SESSION_COLUMNS } from './contract.js';
import { NULL_PARTITION } from './layout.js';

/**
 * A validated record as its line: every field in selection order (the scanner's shape), null when
 * absent, objects whole; so records with the same columns have the same line (exact duplicates).
 */
export function recordLine(rec: SessionRecord): string {
  const r = rec as unknown as Record<string, unknown>;
  const o: Record<string, unknown> = {};
  for (const n of RECORD_SHAPE) {
    if (n.kind === 'leaf') {
      o[n.name] = r[n.name] ?? null;
      continue;
    }
    const from = r[n.name] as Record<string, unknown> | null | undefined;
    const to: Record<string, unknown> = {};
    for (const c of n.children) to[c.name] = from?.[c.name] ?? null;
    o[n.name] = to;
  }
  return JSON.stringify(o);
}

/** read_json's `maximum_object_size`: twice the largest record accepted (record-size.ts; a test keeps them in step). */
export const NDJSON_MAX_OBJECT_BYTES = 16 * 1024 * 1024;

/** The DuckDB type a source field is read as (timestamps arrive as epoch seconds). */
function jsonType(type: string): string {
  return type === 'TIMESTAMPTZ' || type === 'BIGINT' ? 'BIGINT' : type;
}

const sourced = SESSION_COLUMNS.filter((c) => c.source !== 'lineage');
const topLevel = new Map<string, Array<{ field: string; type: string }> | string>();
for (const c of sourced) {
  const [head, field] = c.source.split('.') as [string, string | undefined];
  if (field === undefined) topLevel.set(head, jsonType(c.type));
  else {
    const nested = (topLevel.get(head) as Array<{ field: string; type: string }> | undefined) ?? [];
    nested.push({ field, type: jsonType(c.type) });
    topLevel.set(head, nested);
  }
}

/** `{id: 'VARCHAR', ..., agent: 'STRUCT(id VARCHAR, ...)', ...}` for read_json's `columns`. */
export const NDJSON_COLUMNS = `{${[...topLevel]
  .map(([k, t]) => `${k}: '${typeof t === 'string' ? t : `STRUCT(${t.map((f) => `${f.field} ${f.type}`).join(', ')})`}'`)
  .join(', ')}}`;

/** The contract's columns then `partition`, from read_json alias `r` and the lineage alias `f(extracted)`. */
export const NDJSON_SELECT = [
  ...SESSION_COLUMNS.map((c) => {
    if (c.source === 'lineage') return `to_timestamp(f.extracted) AS ${c.name}`;
    const ref = `r.${c.source}`;
    return c.type === 'TIMESTAMPTZ' ? `to_timestamp(${ref}) AS ${c.name}` : `${ref} AS ${c.name}`;
  }),
  `COALESCE(strftime(to_timestamp(r.started), '%Y-%m-%d'), '${NULL_PARTITION}') AS partition`,
].join(', ');

/** The same after `account`, from the lineage's `f(account)` (a store keeps the columns of its shape's `columnList`). */
export const NDJSON_ACCOUNT_SELECT = `f.account AS account, ${NDJSON_SELECT}`;

/** The reverse, in SQL: a stored row as its record's line (a verify's repair, rows an older version left pending). */
export const RECORD_LINE_OF_ROW = `to_json({${RECORD_SHAPE.map((n) =>
  n.kind === 'leaf' ? `'${n.name}': ${columnValue(n.field)}` : `'${n.name}': {${n.children.map((c) => `'${c.name}': ${columnValue(c.field)}`).join(', ')}}`,
).join(', ')}})::VARCHAR`;

function columnValue(f: FieldDef): string {
  return f.type === 'TIMESTAMPTZ' ? `CAST(epoch(${f.column}) AS BIGINT)` : f.column;
}
