/**
 * How DuckDB reads the records of a `sessions` answer written as newline-delimited JSON (one record
 * per line, as reporting/sessions-body.ts leaves them): the explicit column types of read_json and
 * the select list that maps them onto the contract, both derived from SESSION_COLUMNS' sources.
 * Explicit types matter twice: no sampling, and a value that does not fit its type is an error.
 */
import { SESSION_COLUMNS } from './contract.js';
import { NULL_PARTITION } from './layout.js';

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

/**
 * The contract's columns then `partition`, from read_json alias `r` and the lineage alias
 * `f(extracted)`; with `many`, `f.account` first (each record file holds one account's window).
 */
export function ndjsonSelect(many: boolean): string {
  return many ? `f.account AS account, ${NDJSON_SELECT}` : NDJSON_SELECT;
}

const NDJSON_SELECT = [
  ...SESSION_COLUMNS.map((c) => {
    if (c.source === 'lineage') return `to_timestamp(f.extracted) AS ${c.name}`;
    const ref = `r.${c.source}`;
    return c.type === 'TIMESTAMPTZ' ? `to_timestamp(${ref}) AS ${c.name}` : `${ref} AS ${c.name}`;
  }),
  `COALESCE(strftime(to_timestamp(r.started), '%Y-%m-%d'), '${NULL_PARTITION}') AS partition`,
].join(', ');
