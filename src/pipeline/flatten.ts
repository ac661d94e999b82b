/**
 * Validation and flattening: raw records from one response become a columnar batch in the order
 * of the public contract (src/store/contract.ts), plus the records that were rejected.
 */
import { RecordValidationError } from '../reporting/errors/RecordValidationError.js';
import { validateRecord } from '../reporting/record-schema.js';
import { checkRecordSize } from '../reporting/record-size.js';
import type { SessionRecord } from '../reporting/session-record.js';
import { SESSION_COLUMNS } from '../store/contract.js';

export type CellValue = string | number | boolean | null;

/**
 * A columnar batch: `columns[i]` holds the values of SESSION_COLUMNS[i]. Timestamps are epoch
 * seconds (numbers); the writers convert them.
 */
export interface RowBatch {
  readonly length: number;
  readonly columns: CellValue[][];
}

export interface RejectedRecord {
  sessionId: string | null;
  field: string;
  reason: string;
  raw: unknown;
}

export type InvalidPolicy = 'fail' | 'quarantine';

export interface FlattenResult {
  batch: RowBatch;
  rejected: RejectedRecord[];
  /** Exact duplicates (same id, same values) dropped from the response. */
  duplicatesDropped: number;
}

export const COLUMN_INDEX: Readonly<Record<string, number>> = Object.fromEntries(SESSION_COLUMNS.map((c, i) => [c.name, i]));

/** One record → the contract's values, in column order. */
export function flattenRecord(r: SessionRecord, extractedAt: number): CellValue[] {
  const a = r.agent ?? null;
  const x = r.externalFields ?? null;
  return [
    r.id,
    r.companyId ?? null,
    r.pin ?? null,
    r.started ?? null,
    r.ended ?? null,
    r.duration ?? null,
    r.sessionType ?? null,
    r.recording ?? null,
    r.recordingUrl ?? null,
    a ? (a.id ?? null) : null,
    a ? (a.name ?? null) : null,
    a ? (a.email ?? null) : null,
    r.agentGroupId ?? null,
    r.agentIp ?? null,
    r.customerIp ?? null,
    x ? (x.customerName ?? null) : null,
    x ? (x.externalCaseId ?? null) : null,
    x ? (x.notes ?? null) : null,
    x ? (x.accountingInfo ?? null) : null,
    x ? (x.customerDeviceType ?? null) : null,
    x ? (x.customerOs ?? null) : null,
    extractedAt,
  ];
}

/**
 * Validates and flattens one response. With policy `fail`, the first invalid record throws a
 * RecordValidationError naming the session id and the field; with `quarantine` it is returned in
 * `rejected` and the rest are kept. A session id that appears twice with different values is
 * invalid (both copies are rejected: neither can be trusted); exact duplicates are dropped.
 */
export function flattenResponse(raws: readonly unknown[], extractedAt: number, policy: InvalidPolicy): FlattenResult {
  const rows: CellValue[][] = [];
  const rejected: RejectedRecord[] = [];
  const byId = new Map<string, { row: CellValue[]; raw: unknown; pos: number }>();
  let duplicatesDropped = 0;
  const conflicted = new Set<string>();

  raws.forEach((raw, index) => {
    let rec: SessionRecord;
    try {
      checkRecordSize(raw, index);
      rec = validateRecord(raw, index);
    } catch (err) {
      if (!(err instanceof RecordValidationError) || policy === 'fail') throw err;
      // err.record is the raw record (truncated when it is over the size limit).
      rejected.push({ sessionId: err.sessionId ?? null, field: err.path, reason: err.message, raw: err.record });
      return;
    }
    const row = flattenRecord(rec, extractedAt);
    const seen = byId.get(rec.id);
    if (!seen) {
      byId.set(rec.id, { row, raw, pos: rows.length });
      rows.push(row);
      return;
    }
    if (sameRow(seen.row, row)) {
      duplicatesDropped++;
      return;
    }
    const err = new RecordValidationError(rec.id, index, 'id', 'appears twice in one response with different values', raw);
    if (policy === 'fail') throw err;
    if (!conflicted.has(rec.id)) {
      conflicted.add(rec.id);
      rejected.push({ sessionId: rec.id, field: 'id', reason: err.message, raw: seen.raw });
    }
    rejected.push({ sessionId: rec.id, field: 'id', reason: err.message, raw });
  });

  const kept = conflicted.size ? rows.filter((r) => !conflicted.has(r[0] as string)) : rows;
  return { batch: toColumns(kept), rejected, duplicatesDropped };
}

function sameRow(a: CellValue[], b: CellValue[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function toColumns(rows: readonly CellValue[][]): RowBatch {
  const n = SESSION_COLUMNS.length;
  const columns: CellValue[][] = Array.from({ length: n }, () => new Array<CellValue>(rows.length));
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    for (let c = 0; c < n; c++) columns[c]![r] = row[c]!;
  }
  return { length: rows.length, columns };
}
