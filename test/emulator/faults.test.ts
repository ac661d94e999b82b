import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator, type EmulatorFaults } from '../../src/emulator/index.js';
import { RateLimiter } from '../../src/emulator/faults.js';
import vm from 'node:vm';
import { D, FROM, NOW, TODAY, post, sessionsQuery } from './helpers.js';

let emu: Emulator;
const WINDOW = sessionsQuery(TODAY, TODAY + D, 'id started');
let full: Array<{ id: string; started: number }>;

beforeAll(async () => {
  emu = await startEmulator({ seed: 8, from: FROM, now: NOW });
  full = (await post(emu, { query: WINDOW })).json.data.sessions;
  expect(full.length).toBeGreaterThan(20);
});
afterAll(async () => emu.close());
afterEach(() => {
  emu.setFaults({});
  emu.resetStats();
});

describe('each fault knob', () => {
  it('latencyMs delays every answer, 401s included', async () => {
    emu.setFaults({ latencyMs: 150 });
    for (const authorization of [undefined, null]) {
      const t0 = performance.now();
      await post(emu, { query: WINDOW }, { authorization });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    }
  });

  it('rateLimitRps answers 429 with an integer Retry-After and a JSON body beyond the quota', async () => {
    emu.setFaults({ rateLimitRps: 2 });
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof post>> | undefined;
    for (let i = 0; i < 4; i++) {
      const r = await post(emu, { query: WINDOW });
      statuses.push(r.status);
      if (r.status === 429) refused ??= r;
    }
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses).toContain(429);
    expect(refused!.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(refused!.json.errors[0].message).toMatch(/rate limit/i);
    expect(emu.stats().faults.rateLimited).toBe(statuses.filter((s) => s === 429).length);
    expect(emu.stats().byStatus['429']).toBe(statuses.filter((s) => s === 429).length);
  });

  it('serverErrorRate answers 500, 502 or 503', async () => {
    emu.setFaults({ serverErrorRate: 1 });
    const statuses = new Set<number>();
    for (let i = 0; i < 12; i++) statuses.add((await post(emu, { query: WINDOW })).status);
    expect([...statuses].every((s) => [500, 502, 503].includes(s))).toBe(true);
    expect(statuses.size).toBeGreaterThan(1);
    expect(emu.stats().faults.serverError).toBe(12);
  });

  it('resetRate destroys the connection without an answer', async () => {
    emu.setFaults({ resetRate: 1 });
    await expect(post(emu, { query: WINDOW })).rejects.toThrow();
    expect(emu.stats().faults.reset).toBe(1);
    expect(emu.stats().byStatus).toEqual({});
  });

  it('truncateRate sends a 200 whose body is cut in the middle, with a matching Content-Length', async () => {
    emu.setFaults({ truncateRate: 1 });
    const complete = JSON.stringify({ data: { sessions: full } });
    const raw = await rawPost(emu, JSON.stringify({ query: WINDOW }));
    expect(raw.status).toBe(200);
    expect(Number(raw.headers['content-length'])).toBe(raw.body.length);
    expect(raw.body.length).toBe(Math.floor(Buffer.byteLength(complete) / 2));
    expect(complete.startsWith(raw.body.toString('utf8'))).toBe(true);
    expect(() => JSON.parse(raw.body.toString('utf8'))).toThrow();
    expect(emu.stats().faults.truncate).toBe(1);
    expect(emu.stats().recordsServed).toBe(0);
  });

  it('partialErrorRate returns half the records plus an error', async () => {
    emu.setFaults({ partialErrorRate: 1 });
    const r = await post(emu, { query: WINDOW });
    expect(r.status).toBe(200);
    expect(r.json.data.sessions).toEqual(full.slice(0, Math.floor(full.length / 2)));
    expect(r.json.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/incomplete/), path: ['sessions'] })]);
    expect(emu.stats().faults.partial).toBe(1);
  });

  it('maxResults refuses a window with more records', async () => {
    emu.setFaults({ maxResults: 5 });
    const r = await post(emu, { query: WINDOW });
    expect(r.status).toBe(200);
    expect(r.json.data).toBeNull();
    expect(r.json.errors[0].message).toMatch(/exceeds the maximum result size of 5\b/);
    const small = await post(emu, { query: sessionsQuery(full[0]!.started, full[0]!.started, 'id') });
    expect(small.json.data.sessions.length).toBeLessThanOrEqual(5);
    expect(emu.stats().faults.maxResults).toBe(1);
  });

  it('maxSpanSeconds refuses a longer window', async () => {
    emu.setFaults({ maxSpanSeconds: 3_600 });
    const r = await post(emu, { query: WINDOW });
    expect(r.json.data).toBeNull();
    expect(r.json.errors[0].message).toMatch(/span.*exceeds/);
    expect((await post(emu, { query: sessionsQuery(TODAY, TODAY + 3_600, 'id') })).json.data).not.toBeNull();
    expect(emu.stats().faults.maxSpan).toBe(1);
  });

  it('truncateResultsTo silently returns the first N records', async () => {
    emu.setFaults({ truncateResultsTo: 3 });
    const r = await post(emu, { query: WINDOW });
    expect(r.json).toEqual({ data: { sessions: full.slice(0, 3) } });
    expect(emu.stats().faults.truncatedResults).toBe(1);
  });

  it('draws the same faults in the same order for the same seed', async () => {
    const faults: EmulatorFaults = { serverErrorRate: 0.3, partialErrorRate: 0.3 };
    const run = async (): Promise<string[]> => {
      const e = await startEmulator({ seed: 21, from: FROM, now: NOW, faults });
      try {
        const out: string[] = [];
        for (let i = 0; i < 20; i++) {
          const r = await post(e, { query: WINDOW });
          out.push(`${r.status}${r.json?.errors ? 'E' : ''}`);
        }
        return out;
      } finally {
        await e.close();
      }
    };
    const a = await run();
    expect(await run()).toEqual(a);
    expect(new Set(a).size).toBeGreaterThan(1);
  });

  it('faultRate with faultKinds [rateLimited] answers stray 429s (Retry-After 1) whatever the pace', async () => {
    emu.setFaults({ faultRate: 0.5, faultKinds: ['rateLimited'] });
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await post(emu, { query: WINDOW });
      statuses.push(r.status);
      if (r.status === 429) expect(r.headers.get('retry-after')).toBe('1');
    }
    expect(new Set(statuses)).toEqual(new Set([200, 429]));
    expect(emu.stats().faults.rateLimited).toBe(statuses.filter((st) => st === 429).length);
    expect((emu.stats().faults.serverError ?? 0) + (emu.stats().faults.reset ?? 0) + (emu.stats().faults.truncate ?? 0)).toBe(0);
  });

  it('faultRate draws among all four kinds by default', async () => {
    emu.setFaults({ faultRate: 1 });
    for (let i = 0; i < 40; i++) await post(emu, { query: WINDOW }).catch(() => undefined);
    const f = emu.stats().faults;
    expect([f.rateLimited, f.serverError, f.reset, f.truncate].every((n) => (n ?? 0) > 0)).toBe(true);
  });

  it('concurrencyLimit answers 429 to a request beyond N in flight', async () => {
    emu.setFaults({ concurrencyLimit: 2, latencyMs: 150 });
    const statuses = (await Promise.all(Array.from({ length: 4 }, () => post(emu, { query: WINDOW })))).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 429, 429]);
    // One at a time, never refused.
    for (let i = 0; i < 3; i++) expect((await post(emu, { query: WINDOW })).status).toBe(200);
  });

  it('rateLimitHeaders sends RateLimit-* (or X-RateLimit-* with an epoch reset) with every answer', async () => {
    emu.setFaults({ rateLimitRps: 3, rateLimitHeaders: 'ietf' });
    const r = await Promise.all([0, 1, 2, 3].map(() => post(emu, { query: WINDOW })));
    const remaining = r.map((x) => Number(x.headers.get('ratelimit-remaining'))).sort();
    expect(remaining).toEqual([0, 0, 1, 2]);
    expect(r.every((x) => x.headers.get('ratelimit-limit') === '3' && x.headers.get('ratelimit-reset') === '1')).toBe(true);
    emu.setFaults({ rateLimitRps: 3, rateLimitHeaders: 'x' });
    const x = await post(emu, { query: WINDOW });
    expect(x.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(Number(x.headers.get('x-ratelimit-reset')) - Date.now() / 1000).toBeGreaterThan(0);
    expect(Number(x.headers.get('x-ratelimit-reset')) - Date.now() / 1000).toBeLessThanOrEqual(2);
  });

  it('retryAfterFormat http-date states Retry-After as an HTTP date', async () => {
    emu.setFaults({ rateLimitRps: 1, retryAfterFormat: 'http-date' });
    await post(emu, { query: WINDOW });
    const r = await post(emu, { query: WINDOW });
    expect(r.status).toBe(429);
    const at = Date.parse(r.headers.get('retry-after')!);
    expect(r.headers.get('retry-after')).toMatch(/GMT$/);
    expect(at - Date.now()).toBeGreaterThan(0);
    expect(at - Date.now()).toBeLessThanOrEqual(2000);
  });

  it('refuses impossible settings', () => {
    expect(() => emu.setFaults({ faultKinds: ['meteor' as never] })).toThrow(/faultKinds/);
    expect(() => emu.setFaults({ faultRate: 2 })).toThrow(/faultRate/);
    expect(() => emu.setFaults({ sharedQuotaSchedule: [{ atSeconds: 0, rps: 3 }] })).toThrow(/needs a quota/);
    expect(() => emu.setFaults({ rateLimitSchedule: [{ atSeconds: 5, rps: 3 }, { atSeconds: 2, rps: 1 }] })).toThrow(/rateLimitSchedule/);
    expect(() => emu.setFaults({ concurrencyLimit: 0 })).toThrow(/concurrencyLimit/);
    expect(() => emu.setFaults({ resetRate: 1.5 })).toThrow(RangeError);
    expect(() => emu.setFaults({ maxResults: -1 })).toThrow(/maxResults/);
    expect(() => emu.setFaults({ rateLimitRps: 0 })).toThrow(/rateLimitRps/);
  });
});

describe('stats', () => {
  it('counts requests, answers by status, records served and concurrency', async () => {
    await post(emu, { query: WINDOW });
    await post(emu, { query: WINDOW }, { authorization: 'nope' });
    emu.setFaults({ latencyMs: 100 });
    await Promise.all([post(emu, { query: WINDOW }), post(emu, { query: WINDOW }), post(emu, { query: WINDOW })]);
    const s = emu.stats();
    expect(s.requests).toBe(5);
    expect(s.byStatus).toEqual({ '200': 4, '401': 1 });
    expect(s.recordsServed).toBe(4 * full.length);
    expect(s.inFlight).toBe(0);
    expect(s.maxInFlight).toBe(3);
    emu.resetStats();
    expect(emu.stats()).toMatchObject({ requests: 0, byStatus: {}, recordsServed: 0, maxInFlight: 0 });
  });
});

describe('RateLimiter', () => {
  it('allows floor(rps) per sliding second and tells when the window frees', () => {
    const l = new RateLimiter(3);
    expect([0, 100, 200].map((t) => l.take(t))).toEqual([undefined, undefined, undefined]);
    expect(l.take(300)).toBe(1);
    expect(l.take(1_000)).toBeUndefined();
    expect(l.take(1_050)).toBe(1);
  });

  it('follows a schedule from the first request, and leaves another client its share', () => {
    const l = new RateLimiter({ rps: 5, schedule: [{ atSeconds: 0, rps: 5 }, { atSeconds: 10, rps: 2 }] });
    const taken = (from: number) => [0, 100, 200, 300, 400, 500].filter((dt) => l.take(from + dt) === undefined).length;
    expect(taken(0)).toBe(5);
    expect(taken(10_000)).toBe(2);
    // 3 of 5 a second go to the other client, evenly spread: 2 are left.
    const shared = new RateLimiter({ rps: 5, others: [{ atSeconds: 0, rps: 3 }] });
    shared.take(0);
    const ok = Array.from({ length: 50 }, (_, i) => shared.take(1_000 + i * 100)).filter((r) => r === undefined).length;
    expect(ok).toBeGreaterThanOrEqual(9);
    expect(ok).toBeLessThanOrEqual(11);
    expect(shared.state(6_000)).toMatchObject({ limit: 5 });
  });

  it('states when the oldest counted request leaves the window, exactly (headers round it once)', () => {
    const l = new RateLimiter(3);
    expect(l.state(500)).toMatchObject({ remaining: 3, resetAtMs: 500 });
    l.take(1_250);
    l.take(1_700);
    // X-RateLimit-Reset is this rounded up to a whole second: 3 (2.25 s), not 2 + 1 = 4 from
    // rounding the current second (1.9 s) up and the 0.35 s to go up again.
    expect(l.state(1_900)).toEqual({ limit: 3, remaining: 1, resetSeconds: 1, resetAtMs: 2_250 });
    expect(l.state(2_300)).toMatchObject({ remaining: 2, resetAtMs: 2_700 });
  });

  it.each([2.007, 7.0731234])('follows a schedule whose times are not whole milliseconds (another client from %s s on) at Date.now()\'s magnitude', (at) => {
    // 2.007 s is 2007.0000000000002 ms: added to Date.now() and taken off again it reads 2007, just
    // before the change. The limiter once waited for that change for ever; vm's timeout stops such a loop.
    const start = 1_700_000_000_000;
    const l = new RateLimiter({ rps: 5, others: [{ atSeconds: 0, rps: 0 }, { atSeconds: at, rps: 3 }] });
    const taken = (from: number) => [0, 100, 200, 300, 400, 500].filter((dt) => l.take(from + dt) === undefined).length;
    const run = () => [taken(start), taken(start + 1_000), taken(start + 20_000)];
    expect(vm.runInNewContext('run()', { run }, { timeout: 2_000 })).toEqual([5, 5, 2]);
  });

  it('below one request per second, waits whole seconds', () => {
    const l = new RateLimiter(0.2);
    expect(l.take(0)).toBeUndefined();
    expect(l.take(500)).toBe(5);
    expect(l.take(4_100)).toBe(1);
    expect(l.take(5_000)).toBeUndefined();
  });
});

describe('cacheBodies', () => {
  it('answers a repeated query with the same body, and follows setNow and setFaults', async () => {
    const e = await startEmulator({ seed: 8, from: FROM, now: NOW, cacheBodies: true });
    try {
      const q = sessionsQuery(TODAY, NOW);
      const first = await post(e, { query: q });
      expect((await post(e, { query: q })).text).toBe(first.text);
      expect(first.text).toBe((await post(emu, { query: q })).text);
      e.setNow(NOW + D);
      const later = await post(e, { query: q });
      expect(later.text).not.toBe(first.text);
      e.setFaults({ truncateResultsTo: 2 });
      expect((await post(e, { query: q })).json.data.sessions).toHaveLength(2);
    } finally {
      await e.close();
    }
  });
});

/** A POST through node:http, to see the status, headers and raw bytes of a cut body. */
function rawPost(e: Emulator, body: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(e.url, { method: 'POST', headers: { authorization: e.apiKey, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
