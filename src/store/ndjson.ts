/**
 * The one shape committed records take, and how it becomes columns: newline-delimited JSON, one
 * reporting record per line. The body scanner leaves a fast-shaped answer in it as it is
 * (reporting/sessions-body.ts); a record validated one by one is written in it by `recordLine`
 * (pipeline/flatten.ts). DuckDB reads it with the explicit column types of read_json and the select
 * list that maps them onto the contract, all derived from the fields table (schema/session-fields.ts).
 * Explicit types matter twice: no sampling, and a value that does not fit its type is an error.
 */
import { RECORD_SHAPE, type FieldDef, type SessionRecord } from '../schema/session-fields.js';
import { SESSION_COLUMNS } from './contract.js';
import { NULL_PARTITION } from './layout.js';

/**
 * A validated record as its line: every field of the table in selection order (the scanner's
 * shape), null when absent, unknown fields left out; an object is written whole (its fields null)
 * when it is null or absent. So two records with the same columns have the same line, which is how
 * an exact duplicate in one answer is told from a conflicting one.
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

/**
 * read_json's `maximum_object_size`, 16 MiB: twice the largest record accepted
 * (reporting/record-size.ts MAX_RECORD_BYTES, 8 MiB; a test keeps them in step), so that every
 * committed line can be read back at merge time.
 */
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

/**
 * The same after `account`, from the lineage's `f(account)`: each record file holds one account's
 * window ('' in a single-account store), and its rows carry it; a store keeps the columns its shape
 * has (store/shape.ts `columnList`).
 */
export const NDJSON_ACCOUNT_SELECT = `f.account AS account, ${NDJSON_SELECT}`;

/**
 * The reverse, in SQL: a row of the contract's columns as its record's line (`recordLine`'s shape;
 * timestamps back to epoch seconds), so that rows the store holds can be committed again as a file
 * (a verify's repair, a row an older version left in `_pending_rows`).
 */
export const RECORD_LINE_OF_ROW = `to_json({${RECORD_SHAPE.map((n) =>
  n.kind === 'leaf' ? `'${n.name}': ${columnValue(n.field)}` : `'${n.name}': {${n.children.map((c) => `'${c.name}': ${columnValue(c.field)}`).join(', ')}}`,
).join(', ')}})::VARCHAR`;

function columnValue(f: FieldDef): string {
  return f.type === 'TIMESTAMPTZ' ? `CAST(epoch(${f.column}) AS BIGINT)` : f.column;
}
