import { buildSchema, execute, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator, type WindowRule } from '../../src/emulator/index.js';
import { planFastPath } from '../../src/emulator/reporting-endpoint.js';
import { reportingSchema } from '../../src/emulator/schema.js';
import { ALL_FIELDS, D, FROM, NOW, TODAY, post, sessionsQuery } from './helpers.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ seed: 4, from: FROM, now: NOW, apiKey: 'k-3Jx9-secret' });
});
afterAll(async () => emu.close());

describe('authentication', () => {
  it.each([
    ['no Authorization header', null],
    ['a wrong key', 'k-wrong'],
    ['the right key behind a scheme word', 'Bearer k-3Jx9-secret'],
    ['an OAuth bearer token', 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig'],
    ['the key in another case', 'K-3JX9-SECRET'],
  ])('refuses %s with 401 and a JSON body', async (_what, authorization) => {
    const r = await post(emu, { query: sessionsQuery(TODAY, TODAY + 60) }, { authorization });
    expect(r.status).toBe(401);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    expect(r.json.errors[0].message).toEqual(expect.any(String));
    expect(r.json.data).toBeUndefined();
  });

  it('says why a bearer token is refused', async () => {
    const r = await post(emu, { query: sessionsQuery(TODAY, TODAY + 60) }, { authorization: 'Bearer abc' });
    expect(r.json.errors[0].message).toMatch(/OAuth/);
  });

  it('accepts the key as the whole header value, on / and /graphql', async () => {
    for (const path of ['/', '/graphql']) {
      const r = await post(emu, { query: sessionsQuery(TODAY, TODAY + 3_600) }, { path });
      expect(r.status).toBe(200);
      expect(Array.isArray(r.json.data.sessions)).toBe(true);
    }
  });
});

describe('HTTP and GraphQL errors', () => {
  it('answers a query for an unknown field with 200, graphql-js validation errors and no data', async () => {
    const r = await post(emu, { query: sessionsQuery(TODAY, TODAY + 60, 'id colour') });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      errors: [{ message: 'Cannot query field "colour" on type "Session".', locations: [{ line: 1, column: expect.any(Number) }] }],
    });
  });

  it.each([
    ['a string for an Int! argument', '{ sessions(start: "1", end: 2) { id } }', /Int cannot represent/],
    ['a missing argument', '{ sessions(start: 1) { id } }', /argument "end" of type "Int!" is required/],
    ['an unknown argument', '{ sessions(start: 1, end: 2, limit: 5) { id } }', /Unknown argument "limit"/],
    ['an instant beyond the 32-bit Int', '{ sessions(start: 1, end: 4000000000) { id } }', /non 32-bit signed integer/],
    ['a syntax error', '{ sessions(start: 1, end: 2) { id }', /Syntax Error/],
    ['a selection without subfields', '{ sessions(start: 1, end: 2) { agent } }', /must have a selection of subfields/],
  ])('answers %s with 200 and errors', async (_what, query, message) => {
    const r = await post(emu, { query });
    expect(r.status).toBe(200);
    expect(r.json.data).toBeUndefined();
    expect(r.json.errors[0].message).toMatch(message);
  });

  it('answers a mutation as graphql-js 16 does: 200, an error and data null', async () => {
    const r = await post(emu, { query: 'mutation { sessions { id } }' });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ errors: [expect.objectContaining({ message: 'Schema is not configured to execute mutation operation.' })], data: null });
  });

  it('answers malformed JSON and a body without a query with 400', async () => {
    expect((await post(emu, { raw: '{"query": ' })).status).toBe(400);
    expect((await post(emu, { raw: '[1,2]' })).status).toBe(400);
    const r = await post(emu, { raw: '{"variables":{}}' });
    expect(r.status).toBe(400);
    expect(r.json.errors[0].message).toMatch(/query/);
  });

  it('answers other methods with 405 and other paths with 404', async () => {
    const get = await post(emu, { raw: '' }, { method: 'GET' });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await post(emu, { raw: '' }, { method: 'PUT' })).status).toBe(405);
    expect((await post(emu, { query: '{ __typename }' }, { path: '/v2/reports' })).status).toBe(404);
  });
});

describe('queries', () => {
  it('returns the session named by id, and null for an unknown one', async () => {
    const truth = emu.dataset.sessionsStartedIn(TODAY - D, TODAY)[7]!;
    const r = await post(emu, { query: `{ session(id: "${truth.id}") { ${ALL_FIELDS} } }` });
    expect(r.json).toEqual({ data: { session: truth } });
    const none = await post(emu, { query: '{ session(id: "00000000-0000-4000-8000-000000000000") { id } }' });
    expect(none.json).toEqual({ data: { session: null } });
  });

  it('takes arguments from variables too', async () => {
    const query = 'query W($a: Int!, $b: Int!) { sessions(start: $a, end: $b) { id started } }';
    const r = await post(emu, { query, variables: { a: TODAY, b: TODAY + 6 * 3_600 } });
    const inline = await post(emu, { query: sessionsQuery(TODAY, TODAY + 6 * 3_600, 'id started') });
    expect(r.json).toEqual(inline.json);
    const bad = await post(emu, { query, variables: { a: 'x', b: 1 } });
    expect(bad.json.errors[0].message).toMatch(/Variable "\$a" got invalid value/);
  });

  it('setNow turns a running session into an ended one under the same id', async () => {
    const q = sessionsQuery(NOW - 3 * 3_600, NOW, 'id started ended duration');
    const before = (await post(emu, { query: q })).json.data.sessions as Array<{ id: string; ended: number | null }>;
    const running = before.filter((s) => s.ended === null);
    expect(running.length).toBeGreaterThan(0);
    emu.setNow(NOW + D);
    try {
      const after = (await post(emu, { query: q })).json.data.sessions as Array<{ id: string; started: number; ended: number | null; duration: number | null }>;
      expect(after.map((s) => s.id)).toEqual(before.map((s) => s.id));
      for (const s of after) {
        expect(s.ended).not.toBeNull();
        expect(s.duration).toBe(s.ended! - s.started);
      }
    } finally {
      emu.setNow(NOW);
    }
  });
});

describe('fast path', () => {
  const selections = [
    ALL_FIELDS,
    'started id',
    'id agent { email } externalFields { notes customerName } recording',
    '__typename id agent { __typename name } pin',
    'customerIp ended duration agentGroupId externalFields { customerOs accountingInfo externalCaseId customerDeviceType } recordingUrl companyId sessionType agentIp',
  ];

  it.each(selections)('writes the same JSON as graphql-js execution for { %s }', async (fields) => {
    // A window ending at now holds running sessions too. The fragment form makes the emulator use graphql-js.
    const start = NOW - 8 * 3_600;
    const inline = `{ sessions(start: ${start}, end: ${NOW}) { ${fields} } }`;
    const viaFragment = `{ sessions(start: ${start}, end: ${NOW}) { ...F } } fragment F on Session { ${fields} }`;
    const schema = reportingSchema('Int!');
    expect(planFastPath(schema, parse(inline))).toBeDefined();
    expect(planFastPath(schema, parse(viaFragment))).toBeUndefined();
    const fast = await post(emu, { query: inline });
    const slow = await post(emu, { query: viaFragment });
    expect(fast.json.data.sessions.length).toBeGreaterThan(50);
    expect(fast.text).toBe(slow.text);

    // And the same as a graphql-js server of our own built from the SDL, fed the ground truth.
    const truth = emu.dataset.sessionsStartedIn(start, NOW + 1);
    const own = await execute({ schema: buildSchema(printedSdl()), document: parse(inline), rootValue: { sessions: () => truth } });
    expect(fast.text).toBe(JSON.stringify(own));
  });

  it('keeps an alias on the sessions field', async () => {
    const r = await post(emu, { query: `{ list: sessions(start: ${TODAY}, end: ${TODAY + 3_600}) { id } }` });
    expect(Object.keys(r.json.data)).toEqual(['list']);
  });
});

describe.each(['closed', 'half-open', 'overlap'] as const)('window rule %s', (windowRule: WindowRule) => {
  let e: Emulator;
  beforeAll(async () => {
    e = await startEmulator({ seed: 4, from: FROM, now: NOW, windowRule });
  });
  afterAll(async () => e.close());

  it('returns the sessions the rule describes', async () => {
    // A window ending at a midnight where a scheduled session starts, and starting mid-morning.
    const midnights = Array.from({ length: 10 }, (_, k) => TODAY - k * D);
    const end = midnights.find((m) => e.dataset.sessionsStartedIn(m, m + 1).length > 0)!;
    expect(end).toBeDefined();
    const start = end - 14 * 3_600;
    const got = ((await post(e, { query: sessionsQuery(start, end, 'id') })).json.data.sessions as Array<{ id: string }>).map((s) => s.id);

    const ids = (rs: Array<{ id: string }>) => rs.map((r) => r.id);
    const expected = {
      closed: ids(e.dataset.sessionsStartedIn(start, end + 1)),
      'half-open': ids(e.dataset.sessionsStartedIn(start, end)),
      overlap: ids(e.dataset.sessionsStartedIn(start - D, end + 1).filter((r) => (r.ended ?? NOW) >= start)),
    }[windowRule];
    expect(got).toEqual(expected);
    const atEnd = ids(e.dataset.sessionsStartedIn(end, end + 1));
    if (windowRule === 'half-open') expect(got).not.toContain(atEnd[0]);
    else expect(got).toContain(atEnd[0]);
    if (windowRule === 'overlap') expect(got.length).toBeGreaterThan(ids(e.dataset.sessionsStartedIn(start, end + 1)).length);
  });
});

describe('argument types', () => {
  it("'Int' accepts inline integers, and a missing argument is an error of the field", async () => {
    const e = await startEmulator({ seed: 4, from: FROM, now: NOW, argTypes: 'Int' });
    try {
      const ok = await post(e, { query: sessionsQuery(TODAY, TODAY + 3_600, 'id') });
      expect(ok.json.data.sessions.length).toBeGreaterThan(0);
      const missing = await post(e, { query: `{ sessions(start: ${TODAY}) { id } }` });
      expect(missing.json).toEqual({
        errors: [{ message: expect.stringMatching(/"end" is required/), locations: [{ line: 1, column: 3 }], path: ['sessions'] }],
        data: null,
      });
    } finally {
      await e.close();
    }
  });

  it("'String!' refuses inline integers the way graphql-js does and accepts them quoted", async () => {
    const e = await startEmulator({ seed: 4, from: FROM, now: NOW, argTypes: 'String!' });
    try {
      const asInt = await post(e, { query: sessionsQuery(TODAY, TODAY + 3_600, 'id') });
      expect(asInt.status).toBe(200);
      expect(asInt.json.data).toBeUndefined();
      expect(asInt.json.errors[0].message).toMatch(/String cannot represent a non string value/);
      const quoted = await post(e, { query: sessionsQuery(`"${TODAY}"`, `"${TODAY + 3_600}"`, 'id') });
      const reference = await post(emu, { query: sessionsQuery(TODAY, TODAY + 3_600, 'id') });
      expect(quoted.json).toEqual(reference.json);
      const notANumber = await post(e, { query: sessionsQuery('"yesterday"', `"${TODAY}"`, 'id') });
      expect(notANumber.json.errors[0].message).toMatch(/"start" must be an integer number of seconds/);
    } finally {
      await e.close();
    }
  });
});

function printedSdl(): string {
  return `
    type Query { sessions(start: Int!, end: Int!): [Session!]! session(id: String!): Session }
    type Session { id: String! companyId: String pin: String started: Int ended: Int duration: Int sessionType: String
      recording: Boolean recordingUrl: String agent: Agent agentGroupId: Int agentIp: String customerIp: String externalFields: ExternalFields }
    type Agent { id: String name: String email: String }
    type ExternalFields { customerName: String externalCaseId: String notes: String accountingInfo: String customerDeviceType: String customerOs: String }`;
}
