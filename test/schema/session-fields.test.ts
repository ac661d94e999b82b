import { describe, expect, expectTypeOf, it } from 'vitest';
import { RECORD_SHAPE, SESSION_FIELDS, SESSION_SELECTION, type SessionRecord } from '../../src/schema/session-fields.js';
import { sessionsQuery } from '../../src/reporting/query.js';
import { SESSION_COLUMNS, sessionsTableDdl } from '../../src/store/contract.js';

/** The Session type of the interface document, written out here independently of the table. */
interface DocumentedSession {
  id: string;
  companyId?: string | null;
  pin?: string | null;
  started?: number | null;
  ended?: number | null;
  duration?: number | null;
  sessionType?: string | null;
  recording?: boolean | null;
  recordingUrl?: string | null;
  agent?: { id?: string | null; name?: string | null; email?: string | null } | null;
  agentGroupId?: number | null;
  agentIp?: string | null;
  customerIp?: string | null;
  externalFields?: {
    customerName?: string | null;
    externalCaseId?: string | null;
    notes?: string | null;
    accountingInfo?: string | null;
    customerDeviceType?: string | null;
    customerOs?: string | null;
  } | null;
}

describe('the field table', () => {
  it('derives the record type of the interface document', () => {
    expectTypeOf<SessionRecord>().toEqualTypeOf<DocumentedSession>();
  });

  it('derives the query the vendor documents: every field, objects with their fields, in table order', () => {
    expect(sessionsQuery(0, 60)).toBe(
      '{ sessions(start: 0, end: 60) { id companyId pin started ended duration sessionType recording recordingUrl ' +
        'agent { id name email } agentGroupId agentIp customerIp ' +
        'externalFields { customerName externalCaseId notes accountingInfo customerDeviceType customerOs } } }',
    );
  });

  it('derives the public column contract: one column per field in table order, then the lineage column', () => {
    expect(SESSION_COLUMNS.map((c) => c.name)).toEqual([...SESSION_FIELDS.map((f) => f.column), 'extracted_at']);
    expect(sessionsTableDdl('t')).toContain('  session_id VARCHAR NOT NULL,\n  company_id VARCHAR,');
    expect(sessionsTableDdl('t').match(/NOT NULL/g)).toHaveLength(1);
  });

  it('keeps the fields of one object next to each other, so the selection order is the column order', () => {
    const leaves = RECORD_SHAPE.flatMap((n) => (n.kind === 'leaf' ? [n.field.path] : n.children.map((c) => c.field.path)));
    expect(leaves).toEqual(SESSION_FIELDS.map((f) => f.path));
    expect(SESSION_SELECTION.split(' ').filter((w) => w === '{').length).toBe(2);
  });
});
