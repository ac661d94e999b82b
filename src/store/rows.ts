/**
 * The rows the store accepts from the slow path (records validated one by one in JavaScript):
 * columnar batches in the order of the column contract, and the records set aside by quarantine.
 * A record becomes a row by reading each field of the table (schema/session-fields.ts) at its path.
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

type Read = (r: SessionRecord) => CellValue;

/** One reader per sourced column: a top-level field, or a field of an object that may be null. */
const READERS: readonly Read[] = SESSION_COLUMNS.filter((c) => c.source !== 'lineage').map((c): Read => {
  const [head, field] = c.source.split('.') as [string, string | undefined];
  if (field === undefined) return (r) => ((r as Record<string, CellValue | undefined>)[head] ?? null);
  return (r) => {
    const o = (r as unknown as Record<string, Record<string, CellValue | undefined> | null | undefined>)[head];
    return o ? (o[field] ?? null) : null;
  };
});
if (SESSION_COLUMNS[READERS.length]?.source !== 'lineage' || SESSION_COLUMNS.length !== READERS.length + 1) {
  throw new Error('contract: the lineage column must be the last one');
}

/** One record → the contract's values, in column order (the lineage column last). */
export function flattenRecord(r: SessionRecord, extractedAt: number): CellValue[] {
  const n = READERS.length;
  const row = new Array<CellValue>(n + 1);
  for (let i = 0; i < n; i++) row[i] = READERS[i]!(r);
  row[n] = extractedAt;
  return row;
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
