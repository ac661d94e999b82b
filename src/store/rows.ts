/**
 * The rows the store accepts from the slow path (records validated one by one in JavaScript):
 * columnar batches in the order of the column contract, and the records set aside by quarantine.
 * A record becomes a row by reading each column's source path (schema/session-fields.ts).
 */
import type { SessionRecord } from '../schema/session-fields.js';
import { SESSION_COLUMNS } from './contract.js';

export type CellValue = string | number | boolean | null;

/**
 * A columnar batch: `columns[i]` holds the values of SESSION_COLUMNS[i]. Timestamps are epoch
 * seconds (numbers); the writers convert them.
 */
export interface RowBatch {
  readonly length: number;
  readonly columns: CellValue[][];
}

/** A record that failed validation, kept for the quarantine table when the policy says so. */
export interface RejectedRecord {
  sessionId: string | null;
  field: string;
  reason: string;
  raw: unknown;
}

const sourced = SESSION_COLUMNS.filter((c) => c.source !== 'lineage');
if (SESSION_COLUMNS[sourced.length]?.source !== 'lineage' || SESSION_COLUMNS.length !== sourced.length + 1) {
  throw new Error('contract: the lineage column must be the last one');
}

/**
 * One record → the contract's values, in column order (the lineage column last). Compiled from the
 * contract into the function one would write by hand (`const o0 = r.agent; return [r.id ?? null,
 * …, o0 ? (o0.id ?? null) : null, …, extractedAt]`): reading each path through a generic loop of
 * closures made the slow path's flattening five times slower. The paths are our own identifiers,
 * checked before they are compiled.
 */
export const flattenRecord = compileFlatten();

function compileFlatten(): (r: SessionRecord, extractedAt: number) => CellValue[] {
  const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
  const objects = new Map<string, string>();
  const values = sourced.map((c) => {
    const parts = c.source.split('.');
    if (parts.length > 2 || !parts.every((p) => IDENT.test(p))) throw new Error(`contract: cannot read source ${c.source}`);
    const [head, field] = parts as [string, string | undefined];
    if (field === undefined) return `r.${head} ?? null`;
    let local = objects.get(head);
    if (!local) objects.set(head, (local = `o${objects.size}`));
    return `${local} ? (${local}.${field} ?? null) : null`;
  });
  const locals = [...objects].map(([head, local]) => `const ${local} = r.${head};`).join(' ');
  return new Function('r', 'extractedAt', `${locals} return [${values.join(', ')}, extractedAt];`) as (r: SessionRecord, extractedAt: number) => CellValue[];
}

/** Rows → a columnar batch. */
export function toColumns(rows: readonly CellValue[][]): RowBatch {
  const n = SESSION_COLUMNS.length;
  const columns: CellValue[][] = Array.from({ length: n }, () => new Array<CellValue>(rows.length));
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    for (let c = 0; c < n; c++) columns[c]![r] = row[c]!;
  }
  return { length: rows.length, columns };
}
