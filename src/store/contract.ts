/**
 * The public column contract of the `sessions` table and of the Parquet dataset.
 * BI dashboards are built on these names: change them only with a migration and a note in docs/data.md.
 */
import { SESSION_FIELDS, type ColumnType } from '../schema/session-fields.js';

export interface ContractColumn {
  /** Column name in DuckDB and Parquet. */
  readonly name: string;
  /** DuckDB type. */
  readonly type: ColumnType;
  /** Where the value comes from in the reporting record (dot path), or `lineage`. */
  readonly source: string;
  readonly description: string;
}

/** The lineage column appended to the record's fields: not a field of the record. */
const LINEAGE: ContractColumn = { name: 'extracted_at', type: 'TIMESTAMPTZ', source: 'lineage', description: 'When this version of the record was fetched (UTC).' };

/** The record's fields (schema/session-fields.ts) in table order, then the lineage column. */
export const SESSION_COLUMNS: readonly ContractColumn[] = [
  ...SESSION_FIELDS.map((f) => ({ name: f.column, type: f.type, source: f.path, description: f.description })),
  LINEAGE,
];

/** Columns that are never null: the record's identity. */
const NOT_NULL = new Set<string>(SESSION_FIELDS.filter((f) => !f.nullable).map((f) => f.column));

/**
 * `CREATE TABLE` statement for the contract, used for the sessions table and its staging twins:
 * `accountColumns` before the contract's (a many-account store's rows start with `account`:
 * store/shape.ts), `extra` ones (`name TYPE`) after them.
 * No PRIMARY KEY index: one row per session is kept by the merge (store/session-store.ts), which is
 * the only writer of the table; an index would make every merge after the first one cost
 * microseconds per row (docs/benchmarks.md).
 */
export function sessionsTableDdl(table = 'sessions', accountColumns: readonly string[] = [], extra: readonly string[] = []): string {
  const cols = [
    ...accountColumns.map((c) => `  ${c} VARCHAR NOT NULL`),
    ...SESSION_COLUMNS.map((c) => `  ${c.name} ${c.type}${NOT_NULL.has(c.name) ? ' NOT NULL' : ''}`),
    ...extra.map((c) => `  ${c}`),
  ];
  return `CREATE TABLE IF NOT EXISTS ${table} (\n${cols.join(',\n')}\n)`;
}
