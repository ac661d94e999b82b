import { describe, expect, it } from 'vitest';
import { ReportingClient } from '../../src/reporting/client.js';
import {
  AuthenticationError,
  GraphQLResponseError,
  HttpStatusError,
  RateLimitedError,
  RecordValidationError,
  TransientError,
} from '../../src/reporting/errors/index.js';
import { validateRecord } from '../../src/reporting/record-schema.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { allText, captureLogger, fakeTime } from '../helpers/capture.js';
import { D } from '../helpers/time.js';

const JAN1 = 1767225600;
const KEY = 'test-key-Zq8vX2mP4tR7';

const fx = useEmulator({ apiKey: KEY, seed: 7, from: JAN1, to: JAN1 + 10 * D, now: JAN1 + 10 * D, sessionsPerDay: 50 }, { prefix: 'session-etl-client-' });


function client(extra: Partial<ConstructorParameters<typeof ReportingClient>[0]> = {}) {
  const time = fakeTime();
  const logger = captureLogger();
  const c = new ReportingClient({ url: fx.emu.url, apiKey: KEY, now: time.now, sleep: time.sleep, random: () => 0.5, logger, ...extra });
  return { c, time, logger };
}

describe('ReportingClient against the emulator', () => {
  it('fetches a window and every record validates', async () => {
    fx.emu.setFaults({});
    const { c } = client();
    const r = await c.fetchSessions(JAN1, JAN1 + D);
    expect(r.attempts).toBe(1);
    expect(r.value.length).toBeGreaterThan(0);
    const truth = fx.emu.dataset.sessionsStartedIn(JAN1, JAN1 + D).map((s) => s.id).sort();
    const got = r.value.map((s) => s.id).sort();
    // The emulator's documented rule is closed [start, end]: a session starting exactly at end may be included.
    expect(got.filter((id) => truth.includes(id))).toEqual(truth);
    const one = r.value[0]!;
    expect(one).toHaveProperty('externalFields');
    expect(one).toHaveProperty('agent');
    // The same answer through the production path, as the pipeline reads it: the scanner's fast path.
    const body = (await c.fetchSessionsBody(JAN1, JAN1 + D)).value;
    expect(body.kind).toBe('ndjson');
    if (body.kind === 'ndjson') {
      expect(body.count).toBe(r.value.length);
      expect(body.ndjson.toString('utf8').split('\n').map((l) => JSON.parse(l) as unknown)).toEqual(r.value);
    }
  });

  it('fetches one session by id, and null for an unknown id', async () => {
    fx.emu.setFaults({});
    const { c } = client();
    const truth = fx.emu.dataset.sessionsStartedIn(JAN1, JAN1 + D)[3]!;
    expect(await c.getSession(truth.id)).toEqual(truth);
    expect(await c.getSession('00000000-0000-4000-8000-000000000000')).toBeNull();
    await expect(c.getSession('not-a-uuid')).rejects.toThrow(/must be a UUID/);
  });

  it('a wrong key is an AuthenticationError, not retried, and the key never shows', async () => {
    fx.emu.setFaults({});
    const secret = 'wrong-key-Hh39sLq0';
    const { c, logger } = client({ apiKey: secret });
    const before = fx.emu.stats().requests;
    const err = await c.fetchSessions(JAN1, JAN1 + D).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).retryable).toBe(false);
    expect((err as Error).message).toMatch(/check REPORTING_API_KEY/);
    expect(fx.emu.stats().requests - before).toBe(1);
    expect(allText(err)).not.toContain(secret);
    expect(logger.lines.join('\n')).not.toContain(secret);
  });

  it('retries 5xx with backoff and gives up after maxAttempts with a TransientError', async () => {
    fx.emu.setFaults({ serverErrorRate: 1 });
    const { c, time } = client({ maxAttempts: 4, baseDelayMs: 1000 });
    const before = fx.emu.stats().requests;
    const err = await c.fetchSessions(JAN1, JAN1 + D).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientError);
    expect((err as TransientError).kind).toBe('server-error');
    expect(fx.emu.stats().requests - before).toBe(4);
    // Full jitter with random()=0.5: half of 1000, 2000, 4000.
    expect(time.sleeps).toEqual([500, 1000, 2000]);
    fx.emu.setFaults({});
  });

  it.each([
    ['resetRate', 'network'],
    ['truncateRate', 'incomplete-body'],
  ] as const)('%s faults are transient (%s) and retried until success', async (knob, kind) => {
    fx.emu.setFaults({ [knob]: 1 });
    const { c } = client({ maxAttempts: 2 });
    const err = await c.fetchSessions(JAN1, JAN1 + D).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientError);
    expect((err as TransientError).kind).toBe(kind);
    fx.emu.setFaults({ [knob]: 0.5 });
    const ok = await client({ maxAttempts: 30 }).c.fetchSessions(JAN1, JAN1 + D);
    expect(ok.value.length).toBeGreaterThan(0);
    fx.emu.setFaults({});
  });

  it('honours Retry-After on 429 and calls the rate-limit hook', async () => {
    fx.emu.setFaults({ rateLimitRps: 1 });
    const seen: Array<number | undefined> = [];
    const { c, time } = client({ hooks: { onRateLimited: (ms) => seen.push(ms) }, sleep: async (ms) => void (await new Promise((r) => setTimeout(r, ms))) });
    void time;
    await c.fetchSessions(JAN1, JAN1 + D);
    const r = await c.fetchSessions(JAN1 + D, JAN1 + 2 * D);
    expect(r.value.length).toBeGreaterThan(0);
    expect(r.rateLimited).toBeGreaterThanOrEqual(1);
    expect(seen[0]).toBeGreaterThanOrEqual(1000);
    fx.emu.setFaults({});
  });

  it.each([['seconds', false], ['http-date', true]] as const)('tells the rate-limit hook whether Retry-After was an HTTP date (%s)', async (retryAfterFormat, isDate) => {
    fx.emu.setFaults({ rateLimitRps: 1, retryAfterFormat });
    const seen: Array<boolean | undefined> = [];
    const { c } = client({ hooks: { onRateLimited: (_ms, date) => seen.push(date) }, now: Date.now, sleep: async (ms) => void (await new Promise((r) => setTimeout(r, ms))) });
    await c.fetchSessions(JAN1, JAN1 + D);
    await c.fetchSessions(JAN1 + D, JAN1 + 2 * D);
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen.every((d) => d === isDate)).toBe(true);
    fx.emu.setFaults({});
  });

  it('a 429 without end fails after maxRateLimitWaits with a RateLimitedError', async () => {
    fx.emu.setFaults({ rateLimitRps: 1 });
    const { c, time } = client({ maxRateLimitWaits: 2 });
    await c.fetchSessions(JAN1, JAN1 + D).catch(() => {});
    const err = await c.fetchSessions(JAN1, JAN1 + D).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterMs).toBeGreaterThan(0);
    expect(time.sleeps.every((ms) => ms >= 1000)).toBe(true);
    fx.emu.setFaults({});
  });

  it('rejects partial data that comes with errors', async () => {
    fx.emu.setFaults({ partialErrorRate: 1 });
    const err = await client().c.fetchSessions(JAN1, JAN1 + D).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GraphQLResponseError);
    expect((err as GraphQLResponseError).partialData).not.toBeNull();
    expect((err as Error).message).toMatch(/partial data rejected/);
    fx.emu.setFaults({});
  });

  it('a result cap answers with GraphQL errors', async () => {
    fx.emu.setFaults({ maxResults: 5 });
    const err = await client().c.fetchSessions(JAN1, JAN1 + D).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GraphQLResponseError);
    expect((err as GraphQLResponseError).errors[0]!.message).toMatch(/maximum/);
    fx.emu.setFaults({});
  });

  it('a query with an unknown field gets the GraphQL validation error', async () => {
    const res = await fetch(fx.emu.url, {
      method: 'POST',
      headers: { Authorization: KEY, 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: '{ sessions(start: 1, end: 2) { id nonsense } }' }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { errors: Array<{ message: string }>; data?: unknown };
    expect(body.errors[0]!.message).toMatch(/nonsense/);
  });

  it('a 4xx that is not auth or rate limit is an HttpStatusError, not retried', async () => {
    const c = new ReportingClient({ url: new URL('/nowhere', fx.emu.url).href, apiKey: KEY });
    const err = await c.fetchSessions(JAN1, JAN1 + D).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpStatusError);
  });

  it('a timeout is transient', async () => {
    fx.emu.setFaults({ latencyMs: 300 });
    const { c } = client({ timeoutMs: 50, maxAttempts: 1 });
    const err = await c.fetchSessions(JAN1, JAN1 + D).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientError);
    expect((err as TransientError).kind).toBe('timeout');
    fx.emu.setFaults({});
  });
});

describe('record validation', () => {
  it.each([
    [{ companyId: 'x' }, /#0 \(no id\): field id must be string/],
    [{ id: 'a', started: '17' }, /id "a": field started must be number/],
    [{ id: 'a', started: 1.5 }, /id "a": field started must be int/],
    [{ id: 'a', agent: { name: { first: 'x' } } }, /id "a": field agent\.name must be string, got an object/],
    [{ id: 'a', recording: 'yes' }, /field recording must be boolean/],
  ])('%j is refused naming id and field', (raw, msg) => {
    expect(() => validateRecord(raw, 0)).toThrow(RecordValidationError);
    expect(() => validateRecord(raw, 0)).toThrow(msg);
  });
  it('drops unknown extra fields and accepts nulls', () => {
    const r = validateRecord({ id: 'a', extra: 1, agent: null, externalFields: null, ended: null }, 0);
    expect(r).toEqual({ id: 'a', agent: null, externalFields: null, ended: null });
  });
});
