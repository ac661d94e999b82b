import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { flattenResponse } from '../../src/pipeline/flatten.js';
import { sessionsTableDdl } from '../../src/store/contract.js';
import { NDJSON_COLUMNS, NDJSON_SELECT, RECORD_LINE_OF_ROW, recordLine } from '../../src/store/ndjson.js';
import type { SessionRecord } from '../../src/schema/session-fields.js';

const full: SessionRecord = {
  id: 'a', companyId: '7', pin: '0042', started: 1767225600, ended: 1767229200, duration: 3600, sessionType: 'chat', recording: true,
  recordingUrl: 'https://r/1', agent: { id: '1', name: 'A "quoted" \\ name / é 😀', email: null }, agentGroupId: 12, agentIp: null, customerIp: '::1',
  externalFields: { customerName: 'x,y}{', externalCaseId: '', notes: 'a\nb\u0001\t', accountingInfo: null, customerDeviceType: null, customerOs: null },
};

describe('store/ndjson: one shape for committed records', () => {
  it('writes every field of the table in selection order, null when absent, objects whole, unknown fields left out', () => {
    const sparse = JSON.parse(recordLine({ id: 'b', agent: null, extra: 1 } as unknown as SessionRecord)) as Record<string, unknown>;
    expect(Object.keys(sparse)).toEqual(Object.keys(full));
    expect(sparse.agent).toEqual({ id: null, name: null, email: null });
    expect(sparse.started).toBeNull();
    expect(JSON.parse(recordLine(full))).toEqual(full);
    // A record with an absent object and one with that object's fields all null are the same row, so the same line.
    expect(recordLine({ id: 'c' } as SessionRecord)).toBe(recordLine({ id: 'c', externalFields: { notes: null } } as SessionRecord));
  });

  it('a record read into the table and written back from its columns is the same line (record → columns → record)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ndjson-'));
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      const lines = [recordLine(full), recordLine({ id: 'b' } as SessionRecord)];
      const file = join(dir, 'r.ndjson');
      await writeFile(file, lines.join('\n'));
      await c.run(sessionsTableDdl('t'));
      await c.run(`INSERT INTO t SELECT * EXCLUDE (partition) FROM (SELECT ${NDJSON_SELECT} FROM read_json('${file}', columns = ${NDJSON_COLUMNS}, format = 'newline_delimited') r, (SELECT 1000 AS extracted) f)`);
      const back = (await c.runAndReadAll(`SELECT ${RECORD_LINE_OF_ROW} AS l FROM t ORDER BY session_id`)).getRowObjects().map((r) => r.l);
      expect(back).toEqual(lines);
    } finally {
      c.closeSync();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the slow path writes what the scanner would: one line per kept record, exact duplicates once, conflicting ones rejected', () => {
    const r = flattenResponse([full, { ...full }, { id: 'b', pin: 1 }, { id: 'c' }, { id: 'c', pin: '1' }], 'quarantine');
    expect(r.count).toBe(1);
    expect(r.ndjson.toString()).toBe(recordLine(full));
    expect(r.duplicatesDropped).toBe(1);
    expect(r.rejected.map((x) => [x.sessionId, x.field])).toEqual([['b', 'pin'], ['c', 'id'], ['c', 'id']]);
  });
});
