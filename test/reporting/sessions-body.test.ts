import { describe, expect, it } from 'vitest';
import { GraphQLResponseError, InvalidResponseError, TransientError } from '../../src/reporting/errors/index.js';
import fc from 'fast-check';
import { escapesValid, hasControlByte, readSessionsBody } from '../../src/reporting/sessions-body.js';
import { MAX_RECORD_BYTES } from '../../src/reporting/record-size.js';
import { flattenResponse } from '../../src/pipeline/flatten.js';

const rec = (id: string, extra: Record<string, unknown> = {}) => ({
  id, companyId: '7', pin: '0042', started: 1767225600, ended: null, duration: null, sessionType: 'chat', recording: false,
  recordingUrl: null, agent: { id: '1', name: 'A "quoted" \\ name', email: null }, agentGroupId: 12, agentIp: null, customerIp: '::1',
  externalFields: null, ...extra,
});
const body = (v: unknown) => Buffer.from(JSON.stringify(v));

describe('readSessionsBody', () => {
  it('reads the fast shape as NDJSON, one record per line, values untouched', () => {
    const records = [rec('a'), rec('b', { externalFields: { customerName: 'x,y}{', externalCaseId: '', notes: 'a\nb', accountingInfo: null, customerDeviceType: null, customerOs: null } })];
    const r = readSessionsBody(body({ data: { sessions: records } }), 'w');
    expect(r.kind).toBe('ndjson');
    if (r.kind !== 'ndjson') return;
    expect(r.count).toBe(2);
    expect(r.ndjson.toString().split('\n').map((l) => JSON.parse(l))).toEqual(records);
    expect(readSessionsBody(body({ data: { sessions: [] } }), 'w')).toMatchObject({ kind: 'ndjson', count: 0 });
  });

  it.each([
    ['a float where an integer belongs', { started: 1.5 }],
    ['a string where an integer belongs', { started: '17' }],
    ['a number where a string belongs', { pin: 42 }],
    ['an empty id', { id: '' }],
    ['an unknown extra field', { extra: 1 }],
    ['a boolean as a string', { recording: 'yes' }],
  ])('leaves the fast path for %s: the records go to the precise validator', (_name, extra) => {
    const r = readSessionsBody(body({ data: { sessions: [rec('a'), rec('b', extra)] } }), 'w');
    expect(r.kind).toBe('records');
    if (r.kind === 'records') expect(r.records).toEqual([rec('a'), rec('b', extra)]);
  });

  it('keeps escaped surrogate pairs and every JSON escape on the fast path; a lone surrogate or an unknown escape leaves it', () => {
    const withNotes = (notes: string) =>
      `{"data":{"sessions":[${JSON.stringify(rec('a', { externalFields: { customerName: null, externalCaseId: null, notes: 'x', accountingInfo: null, customerDeviceType: null, customerOs: null } })).replace('"notes":"x"', `"notes":"${notes}"`)}]}}`;
    const fast = ['\\ud83d\\ude00 pair', '\\uD83D\\uDE00 upper', '\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0000 \\u00e9', 'typed \\\\ud83d not an escape', 'ends \\\\'];
    for (const n of fast) expect(readSessionsBody(Buffer.from(withNotes(n)), 'w').kind, n).toBe('ndjson');
    // A lone surrogate is valid JSON: the precise validator decides (it refuses it, naming the session).
    const slow = ['lone high \\ud83d end', 'lone low \\ude00', 'high then text \\ud83dx\\ude00', 'two highs \\ud83d\\ud83d'];
    for (const n of slow) expect(readSessionsBody(Buffer.from(withNotes(n)), 'w').kind, n).toBe('records');
    // An unknown escape is not JSON: the body is refused as JSON.parse refuses it, never handed to DuckDB.
    for (const n of ['unknown \\x', 'short \\u12']) expect(() => readSessionsBody(Buffer.from(withNotes(n)), 'w'), n).toThrow(TransientError);
    expect(escapesValid(Buffer.from('"\\\\\\ud800"'), 0, 10)).toBe(false);
  });

  it('leaves the fast path for another field order and for a session id twice, body untouched', () => {
    const { id, ...rest } = rec('a');
    const reordered = body({ data: { sessions: [rec('z'), { ...rest, id }] } });
    expect(readSessionsBody(reordered, 'w').kind).toBe('records');
    const twice = body({ data: { sessions: [rec('a'), rec('a')] } });
    const r = readSessionsBody(twice, 'w');
    expect(r).toEqual({ kind: 'records', records: [rec('a'), rec('a')], bytes: twice.length });
  });

  it('refuses data that comes with errors, and answers without data.sessions', () => {
    expect(() => readSessionsBody(body({ data: { sessions: [rec('a')] }, errors: [{ message: 'boom' }] }), 'w')).toThrow(GraphQLResponseError);
    expect(() => readSessionsBody(body({ errors: [{ message: 'too wide' }], data: null }), 'w')).toThrow(/too wide/);
    expect(() => readSessionsBody(body({ data: { sessions: null } }), 'w')).toThrow(InvalidResponseError);
  });

  it('a truncated body is transient (incomplete-body)', () => {
    const full = body({ data: { sessions: [rec('a'), rec('b')] } });
    for (const cut of [10, Math.floor(full.length / 2), full.length - 1]) {
      const err = (() => {
        try {
          readSessionsBody(Buffer.from(full.subarray(0, cut)), 'w');
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(TransientError);
      expect((err as TransientError).kind).toBe('incomplete-body');
    }
  });
});

describe('the per-record size limit', () => {
  it('a record over MAX_RECORD_BYTES leaves the fast path, and the precise path names it with its size', () => {
    const big = rec('big-one', { companyId: 'x'.repeat(MAX_RECORD_BYTES) });
    const r = readSessionsBody(body({ data: { sessions: [rec('a'), big] } }), 'w');
    expect(r.kind).toBe('records');
    if (r.kind !== 'records') return;
    expect(() => flattenResponse(r.records, 'fail')).toThrow(/id "big-one": .*is \d+ bytes of JSON, over the limit of 8388608 bytes per record/);
    const q = flattenResponse(r.records, 'quarantine');
    expect(q.count).toBe(1);
    expect(q.rejected).toHaveLength(1);
    expect(JSON.stringify(q.rejected[0]!.raw).length).toBeLessThan(2048);
    // Just under the limit still takes the fast path.
    const fits = rec('fits', { companyId: 'x'.repeat(MAX_RECORD_BYTES - 1024) });
    expect(readSessionsBody(body({ data: { sessions: [fits] } }), 'w').kind).toBe('ndjson');
  });
});

describe('hasControlByte', () => {
  it('finds a byte below 0x20 anywhere in the range, at any alignment, exactly as a byte-by-byte loop does', () => {
    const byte = fc.oneof(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0x1e, max: 0x22 }), fc.constantFrom(0x80, 0x9f, 0xa0, 0xff));
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 64 }), fc.nat(8), fc.nat(8), fc.nat(8), (bytes, pad, cutFront, cutBack) => {
        // A view at an odd offset into a larger buffer, as the body's list is inside the HTTP body.
        const whole = Buffer.alloc(pad + bytes.length + 3, 0x41);
        Buffer.from(bytes).copy(whole, pad);
        const b = whole.subarray(pad);
        const from = Math.min(cutFront, bytes.length);
        const to = Math.max(from, bytes.length - cutBack);
        const naive = bytes.slice(from, to).some((x) => x < 0x20);
        expect(hasControlByte(b, from, to)).toBe(naive);
      }),
      { numRuns: 3000 },
    );
  });
});
