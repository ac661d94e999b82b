/**
 * A window's answer as the records the store commits: one NDJSON line per record (store/ndjson.ts),
 * the rejected records and the duplicates dropped. A body in any other shape is validated record by record.
 */
import { RecordValidationError } from '../reporting/errors/record-validation-error.js';
import { validateRecord } from '../reporting/record-schema.js';
import { checkRecordSize } from '../reporting/record-size.js';
import type { SessionsBody } from '../reporting/sessions-body.js';
import type { RejectedRecord } from '../store/commit-queue.js';
import { recordLine } from '../store/ndjson.js';

export type InvalidPolicy = 'fail' | 'quarantine';

export interface FlattenResult {
  /** One checked record per line. */
  ndjson: Buffer;
  count: number;
  rejected: RejectedRecord[];
  /** Exact duplicates (same id, same values) dropped from the response. */
  duplicatesDropped: number;
}

/** The records of one answer, whichever path the body took. */
export function checkedRecords(body: SessionsBody, policy: InvalidPolicy): FlattenResult {
  if (body.kind === 'ndjson') return { ndjson: body.ndjson, count: body.count, rejected: [], duplicatesDropped: 0 };
  return flattenResponse(body.records, policy);
}

/**
 * Validates one response and writes its records as NDJSON. With policy `fail`, the first invalid
 * record throws a RecordValidationError naming the session id and the field; with `quarantine` it
 * is returned in `rejected` and the rest are kept. A session id that appears twice with different
 * values is invalid (both copies are rejected: neither can be trusted); exact duplicates are dropped.
 */
export function flattenResponse(raws: readonly unknown[], policy: InvalidPolicy): FlattenResult {
  const kept: Array<{ id: string; line: string }> = [];
  const rejected: RejectedRecord[] = [];
  const byId = new Map<string, { line: string; raw: unknown }>();
  let duplicatesDropped = 0;
  const conflicted = new Set<string>();

  raws.forEach((raw, index) => {
    let line: string;
    let id: string;
    try {
      checkRecordSize(raw, index);
      const rec = validateRecord(raw, index);
      id = rec.id;
      line = recordLine(rec);
    } catch (err) {
      if (!(err instanceof RecordValidationError) || policy === 'fail') throw err;
      // err.record is the raw record (truncated when it is over the size limit).
      rejected.push({ sessionId: err.sessionId ?? null, field: err.path, reason: err.message, raw: err.record });
      return;
    }
    const seen = byId.get(id);
    if (!seen) {
      byId.set(id, { line, raw });
      kept.push({ id, line });
      return;
    }
    if (seen.line === line) {
      duplicatesDropped++;
      return;
    }
    const err = new RecordValidationError(id, index, 'id', 'appears twice in one response with different values', raw);
    if (policy === 'fail') throw err;
    if (!conflicted.has(id)) {
      conflicted.add(id);
      rejected.push({ sessionId: id, field: 'id', reason: err.message, raw: seen.raw });
    }
    rejected.push({ sessionId: id, field: 'id', reason: err.message, raw });
  });

  const lines = (conflicted.size ? kept.filter((k) => !conflicted.has(k.id)) : kept).map((k) => k.line);
  return { ndjson: Buffer.from(lines.join('\n'), 'utf8'), count: lines.length, rejected, duplicatesDropped };
}
