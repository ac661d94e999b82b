/** The public column contract of `sessions` and the dataset: change names only with a migration and docs/data.md. */
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

const LINEAGE: ContractColumn = { name: 'extracted_at', type: 'TIMESTAMPTZ', source: 'lineage', description: 'When this version of the record was fetched (UTC).' };

/** The record's fields in table order, then the lineage column. */
export const SESSION_COLUMNS: readonly ContractColumn[] = [
  ...SESSION_FIELDS.map((f) => ({ name: f.column, type: f.type, source: f.path, description: f.description })),
  LINEAGE,
];

const NOT_NULL = new Set<string>(SESSION_FIELDS.filter((f) => !f.nullable).map((f) => f.column));

/**
 * `CREATE TABLE` of the contract, `accountColumns` before it and `extra` (`name TYPE`) after. No
 * PRIMARY KEY: the merge keeps one row per session; an index cost every merge µs a row (docs/benchmarks.md).
 */
export function sessionsTableDdl(table = 'sessions', accountColumns: readonly string[] = [], extra: readonly string[] = []): string {
  const cols = [
    ...accountColumns.map((c) => `  ${c} VARCHAR NOT NULL`),
    ...SESSION_COLUMNS.map((c) => `  ${c.name} ${c.type}${NOT_NULL.has(c.name) ? ' NOT NULL' : ''}`),
    ...extra.map((c) => `  ${c}`),
  ];
  return `CREATE TABLE IF NOT EXISTS ${table} (\n${cols.join(',\n')}\n)`;
}
