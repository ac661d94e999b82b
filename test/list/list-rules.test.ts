import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionRecord } from '../../src/schema/session-fields.js';
import { compileToSql } from '../../src/list/compile-to-sql.js';
import { evaluateInMemory } from '../../src/list/evaluate-in-memory.js';
import { parseListRequest } from '../../src/list/parse-list-request.js';
import { queryDuckDb } from '../../src/list/query-duckdb.js';
import { ids, listBoth, openSessionsDb, type SessionsDb } from './helpers/sessions-db.js';

const BASE = 1_709_251_200; // 2024-03-01T00:00:00Z

const RECORDS: SessionRecord[] = [
  {
    id: 'a1', companyId: 'c1', pin: '0012', started: BASE, ended: BASE + 60, duration: 60, sessionType: 'support', recording: true,
    agent: { id: 'g1', name: 'Alice', email: 'alice@example.com' }, agentGroupId: 2, externalFields: { customerName: 'Zoë', notes: 'VIP' },
  },
  { id: 'b2', pin: '12', started: BASE + 10, sessionType: 'Support', recording: false, agent: { name: 'bob', email: 'bob@example.org' }, agentGroupId: 10, externalFields: { customerName: 'ümit' } },
  { id: 'c3', pin: null, started: BASE + 10, sessionType: 'remoteView', recording: null, agent: null, agentGroupId: null, externalFields: null },
  { id: 'd4', pin: '012', started: BASE + 86_400, ended: null, duration: null, sessionType: 'support', recording: true, agent: { name: 'Émile', email: 'emile@example.com' }, agentGroupId: 2 },
  { id: 'e5', pin: '0012', sessionType: '', recording: false, agent: { name: 'alice', email: 'alice@example.com' }, agentGroupId: 1 },
  { id: 'f6' },
  { id: 'g7', pin: '9', started: BASE + 20, agent: { name: '😀 Smile' }, externalFields: { customerName: 'Ann "Q" Lee' } },
];

let db: SessionsDb;
beforeAll(async () => {
  db = await openSessionsDb();
  await db.load(RECORDS);
});
afterAll(() => db.close());

const both = (params: Record<string, string>) => listBoth(db, RECORDS, params);

describe('filter: field="regex" matches the whole value; both evaluators agree', () => {
  it.each([
    ['whole value, not a substring', 'agent.name="ali"', []],
    ['inline case-insensitivity', 'agent.name="(?i)ali.*"', ['a1', 'e5']],
    ['!= keeps null and absent fields', 'agent.name!="(?i)ali.*"', ['b2', 'c3', 'd4', 'f6', 'g7']],
    ['absent or null counts as the empty string', 'agent.name=""', ['c3', 'f6']],
    ['absent object: its fields are empty', 'externalFields.notes!=""', ['a1']],
    ['epoch seconds as decimal text', 'started="1709251210"', ['b2', 'c3']],
    ['contract column name', 'started_at="17092512[01]0"', ['a1', 'b2', 'c3']],
    ['booleans as true/false', 'recording="true"', ['a1', 'd4']],
    ['null boolean is empty', 'recording=""', ['c3', 'f6', 'g7']],
    ['integers as decimal text', 'agentGroupId="\\d"', ['a1', 'd4', 'e5']],
    ['no leading zeros on numbers', 'agent_group_id="0*10"', ['b2']],
    ['leading zeros kept on text', 'pin="0+12"', ['a1', 'd4', 'e5']],
    ['& binds tighter than |', 'sessionType="support"&recording="true"|pin="9"', ['a1', 'd4', 'g7']],
    ['parentheses', 'sessionType="support"&(recording="false"|pin="012")', ['d4']],
    ['negation inside and', 'sessionType="(?i)support"&pin!="0+12"', ['b2']],
    ['a field that does not exist is empty', 'nosuch=""', ['a1', 'b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
    ['... and never matches text', 'nosuch="x"', []],
    ['a quote in the data via \\x22', 'externalFields.customerName=".*\\x22Q\\x22.*"', ['g7']],
    ['non-ASCII literal', 'external_customer_name="Zoë"', ['a1']],
    ['(?i) folds US-ASCII only', 'externalFields.customerName="(?i)ZOë"', ['a1']],
    ['(?i) does not fold ë', 'externalFields.customerName="(?i)ZOË"', []],
    ['supplementary character is one character', 'agent.name=". Smile"', ['g7']],
    ['. does not match a line break', 'agent.email=".*"', ['a1', 'b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ])('%s: %s', async (_, filter, expected) => {
    expect(ids(await both({ filter }))).toEqual(expected);
  });

  it('lists the names that do not exist', () => {
    expect(parseListRequest({ filter: 'nosuch="" | agent.nick="x"' }).unknownFields).toEqual(['nosuch', 'agent.nick']);
  });
});

describe('sorting: null first, numbers numerically, false before true, stable tie-breaker id', () => {
  it.each([
    ['default: id', {}, ['a1', 'b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
    ['started ascending: null first, ties by id', { ascending: 'started=true' }, ['e5', 'f6', 'a1', 'b2', 'c3', 'g7', 'd4']],
    ['started descending: null last, ties still by id', { ascending: 'started=false' }, ['d4', 'g7', 'b2', 'c3', 'a1', 'e5', 'f6']],
    ['descending=true reverses the default', { descending: 'true' }, ['g7', 'f6', 'e5', 'd4', 'c3', 'b2', 'a1']],
    ['descending=true reverses the given order', { descending: 'true', sort: 'started' }, ['d4', 'g7', 'b2', 'c3', 'a1', 'e5', 'f6']],
    ['descending=<fields>', { descending: 'started_at' }, ['d4', 'g7', 'b2', 'c3', 'a1', 'e5', 'f6']],
    ['strings: ASCII case-insensitive, then code points', { sort: 'agent.name' }, ['c3', 'f6', 'a1', 'e5', 'b2', 'd4', 'g7']],
    ['numbers numerically (2 < 10)', { sort: 'agentGroupId' }, ['c3', 'f6', 'g7', 'e5', 'a1', 'd4', 'b2']],
    ['booleans: null, false, true', { sort: 'recording' }, ['c3', 'f6', 'g7', 'b2', 'e5', 'a1', 'd4']],
    ['leading-zero text stays text', { sort: 'pin' }, ['c3', 'f6', 'a1', 'e5', 'd4', 'b2', 'g7']],
    ['several keys in order', { ascending: 'pin=true,started=false' }, ['c3', 'f6', 'a1', 'e5', 'd4', 'b2', 'g7']],
    ['Spring form', { sort: 'agentGroupId,desc,id' }, ['b2', 'a1', 'd4', 'e5', 'c3', 'f6', 'g7']],
    ['a field that does not exist changes nothing', { ascending: 'nosuch=false' }, ['a1', 'b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
    ['sorting by id descending needs no tie-breaker', { ascending: 'session_id=false' }, ['g7', 'f6', 'e5', 'd4', 'c3', 'b2', 'a1']],
  ] as [string, Record<string, string>, string[]][])('%s', async (_, params, expected) => {
    expect(ids(await both(params))).toEqual(expected);
  });
});

describe('id is an identifier: code-point order, also as the tie-breaker', () => {
  const MIXED: SessionRecord[] = [{ id: 'b', pin: '1' }, { id: 'A', pin: '1' }, { id: 'a', pin: '1' }, { id: '😀', pin: '1' }, { id: '\ue000', pin: '1' }, { id: 'B', pin: '1' }];
  it.each([
    ['id ascending', { sort: 'id' }, ['A', 'B', 'a', 'b', '\ue000', '😀']],
    ['id descending', { descending: 'true' }, ['😀', '\ue000', 'b', 'a', 'B', 'A']],
    ['ties on another key', { sort: 'pin desc' }, ['A', 'B', 'a', 'b', '\ue000', '😀']],
  ] as [string, Record<string, string>, string[]][])('%s', async (_, params, expected) => {
    await db.load(MIXED);
    try {
      expect(ids(await listBoth(db, MIXED, params))).toEqual(expected);
    } finally {
      await db.load(RECORDS);
    }
  });
});

describe('paging: truncation for offset/pageSize, none for page/size', () => {
  it.each([
    ['first page', { pageSize: '2' }, ['a1', 'b2'], { total: 7, offset: 0, pageSize: 2 }],
    ['a middle page', { offset: '2', pageSize: '3' }, ['c3', 'd4', 'e5'], { total: 7, offset: 2, pageSize: 3 }],
    ['a page past the end is cut to what remains', { offset: '5', pageSize: '5' }, ['f6', 'g7'], { total: 7, offset: 5, pageSize: 2 }],
    ['an offset past the end goes to the last item', { offset: '99', pageSize: '5' }, ['g7'], { total: 7, offset: 6, pageSize: 1 }],
    ['offset 0 of nothing', { filter: 'pin="x"', offset: '3' }, [], { total: 0, offset: 0, pageSize: 0 }],
    ['default page size holds everything', {}, ['a1', 'b2', 'c3', 'd4', 'e5', 'f6', 'g7'], { total: 7, offset: 0, pageSize: 7 }],
    ['page 0', { page: '0', size: '3' }, ['a1', 'b2', 'c3'], { total: 7, offset: 0, pageSize: 3 }],
    ['last page, partly filled', { page: '2', size: '3' }, ['g7'], { total: 7, offset: 6, pageSize: 3 }],
    ['a page past the end is empty', { page: '5', size: '3' }, [], { total: 7, offset: 15, pageSize: 3 }],
  ] as [string, Record<string, string>, string[], object][])('%s', async (_, params, expected, window) => {
    const page = await both(params);
    expect({ ids: ids(page), total: page.total, offset: page.offset, pageSize: page.pageSize }).toEqual({ ids: expected, ...window });
  });
});

describe('attributeNames: interface shape, nested objects, nulls for what is missing', () => {
  it.each([
    ['a leaf and a nested leaf', 'id,agent.name', { id: 'c3', agent: { name: null } }],
    ['a whole object', 'agent', { agent: { id: null, name: null, email: null } }],
    ['contract column names', 'started_at,agent_email,session_id', { id: 'c3', started: BASE + 10, agent: { email: null } }],
    ['interface order, whatever the request order', 'pin,id', { id: 'c3', pin: null }],
    ['a name that does not exist is left out', 'id,nosuch', { id: 'c3' }],
  ])('%s', async (_, attributeNames, expected) => {
    const page = await both({ attributeNames, filter: 'id="c3"' });
    expect(page.items).toStrictEqual([expected]);
    expect(Object.keys(page.items[0]!)).toEqual(Object.keys(expected));
  });

  it('returns every field of the interface by default', async () => {
    const page = await both({ filter: 'id="a1"' });
    expect(page.items).toStrictEqual([{
      id: 'a1', companyId: 'c1', pin: '0012', started: BASE, ended: BASE + 60, duration: 60, sessionType: 'support', recording: true,
      recordingUrl: null, agent: { id: 'g1', name: 'Alice', email: 'alice@example.com' }, agentGroupId: 2, agentIp: null, customerIp: null,
      externalFields: { customerName: 'Zoë', externalCaseId: null, notes: 'VIP', accountingInfo: null, customerDeviceType: null, customerOs: null },
    }]);
  });
});

describe('fromDate / toDate: half-open range over the session start', () => {
  it.each([
    ['from is inclusive; no start, no match', { fromDate: String(BASE + 10) }, ['b2', 'c3', 'd4', 'g7']],
    ['to is exclusive', { toDate: String(BASE + 10) }, ['a1']],
    ['a day', { fromDate: '2024-03-01', toDate: '2024-03-02' }, ['a1', 'b2', 'c3', 'g7']],
    ['with an offset', { fromDate: '2024-03-01T01:00:10+01:00', toDate: '2024-03-01T00:00:20Z' }, ['b2', 'c3']],
    ['a fraction rounds up', { fromDate: '2024-03-01T00:00:09.2Z' }, ['b2', 'c3', 'd4', 'g7']],
    ['combined with a filter', { fromDate: '2024-03-01', filter: 'recording="true"' }, ['a1', 'd4']],
  ] as [string, Record<string, string>, string[]][])('%s', async (_, params, expected) => {
    expect(ids(await both(params))).toEqual(expected);
  });
});

describe('the SQL evaluator', () => {
  it('binds every value: no regular expression, date or path in the SQL text', () => {
    const req = parseListRequest({ filter: `pin="x'\\); DROP TABLE sessions; --"`, fromDate: '2024-03-01' });
    const c = compileToSql(req, { parquetGlob: "/data/it's/*.parquet" });
    expect(c.sql).not.toMatch(/DROP|it's|1709251200|x{78}/);
    expect(c.params).toEqual(["/data/it's/*.parquet", BASE, req.filter?.type === 'match' ? req.filter.pattern.re2 : 'not a match']);
  });

  it('accepts only plain table names', () => {
    const req = parseListRequest({});
    expect(compileToSql(req, { table: 'main.sessions' }).sql).toContain('FROM "main"."sessions"');
    expect(() => compileToSql(req, { table: 'sessions; DROP TABLE x' })).toThrow(TypeError);
  });

  it('reads the Parquet dataset with the same answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'list-parquet-'));
    try {
      await db.connection.run(`COPY sessions TO '${join(dir, 'part-0.parquet')}' (FORMAT parquet)`);
      for (const params of [{ sort: 'agent.name', pageSize: '3', offset: '2' }, { filter: 'pin="0+12"', fromDate: '2024-03-01' }, { descending: 'started' }]) {
        const req = parseListRequest(params);
        expect(await queryDuckDb(db.connection, req, { parquetGlob: join(dir, '*.parquet') })).toEqual(evaluateInMemory(RECORDS, req));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps its order whatever default_collation the connection has', async () => {
    await db.connection.run("SET default_collation = 'nocase'");
    try {
      expect(ids(await both({ sort: 'agent.name' }))).toEqual(['c3', 'f6', 'a1', 'e5', 'b2', 'd4', 'g7']);
    } finally {
      await db.connection.run('RESET default_collation');
    }
  });
});

describe('the in-memory evaluator', () => {
  it('leaves its input alone and keeps the input order of duplicate ids', () => {
    const records: SessionRecord[] = [{ id: 'x', pin: '2' }, { id: 'x', pin: '1' }, { id: 'a' }];
    const copy = structuredClone(records);
    expect(evaluateInMemory(records, parseListRequest({ attributeNames: 'id,pin' })).items).toEqual([{ id: 'a', pin: null }, { id: 'x', pin: '2' }, { id: 'x', pin: '1' }]);
    expect(records).toEqual(copy);
  });
});
