/**
 * Validation and flattening of the slow path: raw records from one response are validated
 * (reporting/record-schema.ts) and become a columnar batch in the order of the public contract
 * (store/rows.ts), plus the records that were rejected and the duplicates dropped.
 */
import { RecordValidationError } from '../reporting/errors/record-validation-error.js';
import { validateRecord } from '../reporting/record-schema.js';
import { checkRecordSize } from '../reporting/record-size.js';
import type { SessionRecord } from '../schema/session-fields.js';
import { flattenRecord, toColumns, type CellValue, type RejectedRecord, type RowBatch } from '../store/rows.js';

export type InvalidPolicy = 'fail' | 'quarantine';

export interface FlattenResult {
  batch: RowBatch;
  rejected: RejectedRecord[];
  /** Exact duplicates (same id, same values) dropped from the response. */
  duplicatesDropped: number;
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
