/**
 * The Session record schema (zod). `id` is required; every other field may be null or absent;
 * integers must be integers. Unknown extra fields are dropped (we select the fields we want).
 */
import { z } from 'zod';
import { redact } from '../util/redact.js';
import { RecordValidationError } from './errors/RecordValidationError.js';
import type { SessionRecord } from './session-record.js';

const str = z.string().nullish();
const int = z.number().int().nullish();

export const AgentSchema = z.object({ id: str, name: str, email: str });
export const ExternalFieldsSchema = z.object({
  customerName: str,
  externalCaseId: str,
  notes: str,
  accountingInfo: str,
  customerDeviceType: str,
  customerOs: str,
});

export const SessionRecordSchema = z.object({
  id: z.string().min(1, 'must be a non-empty string'),
  companyId: str,
  pin: str,
  started: int,
  ended: int,
  duration: int,
  sessionType: str,
  recording: z.boolean().nullish(),
  recordingUrl: str,
  agent: AgentSchema.nullish(),
  agentGroupId: int,
  agentIp: str,
  customerIp: str,
  externalFields: ExternalFieldsSchema.nullish(),
});

/** Validates one record; throws RecordValidationError naming the id and the first failing field. */
export function validateRecord(raw: unknown, index: number): SessionRecord {
  const result = SessionRecordSchema.safeParse(raw);
  if (result.success) return result.data as SessionRecord;
  const issue = result.error.issues[0]!;
  const id = raw && typeof raw === 'object' && typeof (raw as { id?: unknown }).id === 'string'
    ? (raw as { id: string }).id
    : undefined;
  const path = issue.path.map(String).join('.');
  throw new RecordValidationError(id, index, path, describeIssue(issue, valueAt(raw, issue.path)), raw);
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let cur = raw;
  for (const key of path) {
    if (cur == null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

function describeIssue(issue: z.core.$ZodIssue, received: unknown): string {
  const got = received === undefined ? ', got nothing' : `, got ${describeValue(received)}`;
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${issue.expected}${got}`;
    default:
      return `${issue.message}${got}`;
  }
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') {
    // Redacted before it is cut short: a cut secret would no longer be recognised, and most of it would leak.
    const r = redact(v);
    return `a string ${JSON.stringify(r.length > 40 ? r.slice(0, 40) + '…' : r)}`;
  }
  return `${typeof v} ${String(v)}`;
}
