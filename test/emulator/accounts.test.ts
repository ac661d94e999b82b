/** The emulator with several accounts (issue 18): one key, one dataset and one quota per account, over real HTTP. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { emulatorAccounts, startEmulator, type Emulator, type EmulatorAccount } from '../../src/emulator/index.js';
import { SharedDayCache } from '../../src/emulator/session-dataset.js';
import { ALL_FIELDS, D, FROM, NOW, TODAY, post, sessionsQuery } from './helpers.js';

const ACCOUNTS: EmulatorAccount[] = [
  { name: 'acme', apiKey: 'k-acme-secret' },
  { name: 'globex', apiKey: 'k-globex-secret', sessionsPerDay: 60 },
  { name: 'initech', apiKey: 'k-initech-secret', seed: 4 },
  { name: 'umbrella', apiKey: 'k-umbrella-secret', revoked: true },
];
const DAY = [TODAY - D, TODAY] as const;

async function sessionsAs(emu: Emulator, key: string, start: number, end: number, fields = ALL_FIELDS) {
  const r = await post(emu, { query: sessionsQuery(start, end, fields) }, { authorization: key });
  expect(r.status).toBe(200);
  return r.json.data.sessions as Array<{ id: string; started: number; ended: number | null }>;
}

describe('several accounts', () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await startEmulator({ seed: 4, from: FROM, now: NOW, accounts: ACCOUNTS, cacheBodies: true });
  });
  afterAll(async () => emu.close());

  it('serves each account its own data under its own key, as its dataset says', async () => {
    const seen = new Map<string, string[]>();
    for (const name of ['acme', 'globex', 'initech']) {
      const account = emu.account(name);
      const got = await sessionsAs(emu, account.apiKey, ...DAY);
      const truth = account.dataset.sessionsStartedIn(DAY[0], DAY[1] + 1);
      expect(got.length).toBeGreaterThan(20);
      expect(got).toEqual(truth);
      seen.set(name, got.map((s) => s.id));
    }
    // The same window, three different answers (the body cache is per account too).
    expect(seen.get('acme')).not.toEqual(seen.get('globex'));
    expect(seen.get('globex')!.length).toBeLessThan(seen.get('acme')!.length);
  });

  it('never gives two accounts the same session id, even with the same seed as the single-account emulator', async () => {
    const single = await startEmulator({ seed: 4, from: FROM, now: NOW });
    try {
      const singleIds = single.dataset.sessionsStartedIn(FROM, NOW).map((s) => s.id);
      const initech = emu.account('initech').dataset.sessionsStartedIn(FROM, NOW);
      // Seed 4 for both: the same sessions (same starts), under other ids.
      expect(initech.map((s) => s.started)).toEqual(single.dataset.sessionsStartedIn(FROM, NOW).map((s) => s.started));
      const all = [...singleIds, ...['acme', 'globex', 'initech'].flatMap((n) => emu.account(n).dataset.sessionsStartedIn(FROM, NOW).map((s) => s.id))];
      expect(all.length).toBeGreaterThan(5_000);
      expect(new Set(all).size).toBe(all.length);
    } finally {
      await single.close();
    }
  });

  it("finds a session by id only under its own account's key", async () => {
    const [mine] = emu.account('acme').dataset.sessionsStartedIn(...DAY);
    const query = `{ session(id: "${mine!.id}") { id started } }`;
    const own = await post(emu, { query }, { authorization: 'k-acme-secret' });
    expect(own.json.data.session).toEqual({ id: mine!.id, started: mine!.started });
    const other = await post(emu, { query }, { authorization: 'k-globex-secret' });
    expect(other.json.data.session).toBeNull();
    expect(emu.account('globex').dataset.byId(mine!.id)).toBeUndefined();
  });

  it.each([
    ['an unknown key', 'k-nobody', /^Invalid API key\.$/],
    ['no key', null, /Missing API key/],
    ['a revoked key', 'k-umbrella-secret', /revoked/],
    ['the single-account default key', 'emulator-reporting-key', /^Invalid API key\.$/],
  ])('refuses %s with 401 and a JSON body', async (_what, authorization, message) => {
    const r = await post(emu, { query: sessionsQuery(...DAY) }, { authorization });
    expect(r.status).toBe(401);
    expect(r.json).toEqual({ errors: [{ message: expect.stringMatching(message) }] });
  });

  it('lists the accounts with their keys; apiKey and dataset are the first account’s', () => {
    expect(emu.accounts.map((a) => [a.name, a.apiKey, a.revoked])).toEqual(ACCOUNTS.map((a) => [a.name, a.apiKey, a.revoked ?? false]));
    expect(emu.apiKey).toBe('k-acme-secret');
    expect(emu.dataset.sessionsStartedIn(...DAY)).toEqual(emu.account('acme').dataset.sessionsStartedIn(...DAY));
    expect(() => emu.account('nobody')).toThrow(/no account named "nobody"/);
  });

  it('counts requests per account, revoked keys included', async () => {
    emu.resetStats();
    await sessionsAs(emu, 'k-globex-secret', ...DAY);
    await post(emu, { query: sessionsQuery(...DAY) }, { authorization: 'k-umbrella-secret' });
    const stats = emu.stats();
    expect(stats.requests).toBe(2);
    expect(stats.accounts!.globex).toMatchObject({ requests: 1, byStatus: { 200: 1 } });
    expect(stats.accounts!.globex!.recordsServed).toBe(emu.account('globex').dataset.sessionsStartedIn(DAY[0], DAY[1] + 1).length);
    expect(stats.accounts!.umbrella).toMatchObject({ requests: 1, byStatus: { 401: 1 }, recordsServed: 0 });
    expect(stats.accounts!.acme).toMatchObject({ requests: 0, byStatus: {} });
  });
});

describe('quotas and faults per account', () => {
  let emu: Emulator | undefined;
  afterEach(async () => {
    await emu?.close();
    emu = undefined;
  });

  it("counts each account's quota separately: one account's 429s never touch another's", async () => {
    // One request per 100 s: the second request of an account is refused whatever the machine's speed.
    emu = await startEmulator({ seed: 4, from: FROM, now: NOW, accounts: ACCOUNTS.slice(0, 3), faults: { rateLimitRps: 0.01 } });
    const q = { query: sessionsQuery(TODAY, TODAY + 3_600) };
    expect((await post(emu, q, { authorization: 'k-acme-secret' })).status).toBe(200);
    const refused = await post(emu, q, { authorization: 'k-acme-secret' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect((await post(emu, q, { authorization: 'k-acme-secret' })).status).toBe(429);
    expect((await post(emu, q, { authorization: 'k-globex-secret' })).status).toBe(200);
    expect((await post(emu, q, { authorization: 'k-initech-secret' })).status).toBe(200);
    const stats = emu.stats();
    expect(stats.faults.rateLimited).toBe(2);
    expect(stats.accounts!.acme!.faults.rateLimited).toBe(2);
    expect(stats.accounts!.globex!.faults.rateLimited).toBe(0);
  });

  it("applies an account's own quota over the emulator's, and keeps it across setFaults", async () => {
    const accounts = [{ name: 'small', apiKey: 'k-small', rateLimitRps: 0.01 }, { name: 'big', apiKey: 'k-big' }];
    emu = await startEmulator({ seed: 4, from: FROM, now: NOW, accounts });
    const q = { query: sessionsQuery(TODAY, TODAY + 3_600) };
    const statuses = async (key: string, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await post(emu!, q, { authorization: key })).status);
      return out;
    };
    expect(await statuses('k-small', 2)).toEqual([200, 429]);
    expect(await statuses('k-big', 5)).toEqual([200, 200, 200, 200, 200]);
    emu.setFaults({ serverErrorRate: 0 });
    expect(await statuses('k-small', 2)).toEqual([200, 429]);
    expect(await statuses('k-big', 3)).toEqual([200, 200, 200]);
  });

  it('answers one account slowly without slowing the others', async () => {
    const accounts = [{ name: 'slow', apiKey: 'k-slow', latencyMs: 1_500 }, { name: 'quick', apiKey: 'k-quick' }];
    emu = await startEmulator({ seed: 4, from: FROM, now: NOW, accounts });
    const q = { query: sessionsQuery(TODAY, TODAY + 3_600) };
    const order: string[] = [];
    const t0 = performance.now();
    const slow = post(emu, q, { authorization: 'k-slow' }).then((r) => {
      order.push('slow');
      return { r, ms: performance.now() - t0 };
    });
    const quick = post(emu, q, { authorization: 'k-quick' }).then((r) => {
      order.push('quick');
      return r;
    });
    const [s, k] = await Promise.all([slow, quick]);
    expect(s.r.status).toBe(200);
    expect(k.status).toBe(200);
    expect(s.ms).toBeGreaterThanOrEqual(1_450);
    expect(order).toEqual(['quick', 'slow']);
  });

  it("applies an account's own faults only to that account", async () => {
    const accounts = [{ name: 'flaky', apiKey: 'k-flaky', faults: { serverErrorRate: 1 } }, { name: 'fine', apiKey: 'k-fine' }];
    emu = await startEmulator({ seed: 4, from: FROM, now: NOW, accounts });
    const q = { query: sessionsQuery(TODAY, TODAY + 3_600) };
    expect([500, 502, 503]).toContain((await post(emu, q, { authorization: 'k-flaky' })).status);
    expect((await post(emu, q, { authorization: 'k-fine' })).status).toBe(200);
  });

  it.each([
    [[{ name: 'Acme', apiKey: 'k' }], /accounts\[0\]\.name must match/],
    [[{ name: 'a', apiKey: 'k' }, { name: 'a', apiKey: 'k2' }], /accounts\[1\] \(a\): the name is given twice/],
    [[{ name: 'a', apiKey: 'same-key' }, { name: 'b', apiKey: 'same-key' }], /accounts\[1\] \(b\)\.apiKey is the key of another account/],
    [[{ name: 'a', apiKey: '' }], /accounts\[0\] \(a\)\.apiKey must be a non-empty string/],
    [[{ name: 'a', apiKey: 'k', rateLimit: 3 }], /unknown setting "rateLimit"/],
    [[{ name: 'a', apiKey: 'k', rateLimitRps: 0 }], /accounts \(a\): faults\.rateLimitRps must be a positive number/],
    [[{ name: 'a', apiKey: 'k', seed: 1.5 }], /accounts\[0\] \(a\)\.seed must be an integer/],
    [[], /accounts must be a non-empty list/],
  ])('refuses bad accounts %j with a RangeError naming the account and the setting', async (accounts, message) => {
    const err = await startEmulator({ accounts: accounts as EmulatorAccount[] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain('same-key');
  });

  it('refuses apiKey together with accounts', async () => {
    await expect(startEmulator({ apiKey: 'x', accounts: [{ name: 'a', apiKey: 'k' }] })).rejects.toThrow(/apiKey and accounts cannot be combined/);
  });
});

describe('many accounts', () => {
  it('serves 200 accounts from derived keys, each its own data, with days made lazily in one bounded cache', async () => {
    const accounts = emulatorAccounts(200, 7);
    expect(accounts[0]).toEqual({ name: 'acct-000', apiKey: expect.stringMatching(/^emulator-key-acct-000-[0-9a-f]{8}$/) });
    expect(accounts[199]!.name).toBe('acct-199');
    expect(emulatorAccounts(200, 7)).toEqual(accounts);
    expect(emulatorAccounts(2, 8)[0]!.apiKey).not.toBe(accounts[0]!.apiKey);
    expect(new Set(accounts.map((a) => a.apiKey)).size).toBe(200);
    expect(emulatorAccounts(1001, 7)[1000]!.name).toBe('acct-1000');
    expect(emulatorAccounts(1001, 7)[0]!.name).toBe('acct-0000');

    const emu = await startEmulator({ seed: 7, from: FROM, now: NOW, sessionsPerDay: 100, accounts });
    try {
      const firstIds = new Set<string>();
      for (const a of accounts) {
        const got = await sessionsAs(emu, a.apiKey, ...DAY, 'id');
        expect(got.map((s) => s.id)).toEqual(emu.account(a.name).dataset.sessionsStartedIn(DAY[0], DAY[1] + 1).map((s) => s.id));
        if (got[0]) firstIds.add(got[0].id);
      }
      expect(firstIds.size).toBe(200);
      expect(emu.stats().accounts!['acct-123']!.requests).toBe(1);
    } finally {
      await emu.close();
    }
  });

  it('the shared day cache stays within its byte budget, dropping the least recently used day', () => {
    const day = (bytes: number) => ({ gen: { text: Buffer.alloc(bytes), count: 0 } }) as never;
    const cache = new SharedDayCache(4 * 1_000 * 3);
    cache.set('a', day(1_000));
    cache.set('b', day(1_000));
    cache.set('c', day(1_000));
    expect(cache.size).toBe(3);
    cache.get('a');
    cache.set('d', day(1_000));
    expect(cache.size).toBe(3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    cache.set('huge', day(100_000));
    expect(cache.size).toBe(1);
    expect(cache.get('huge')).toBeDefined();
  });
});

describe('without accounts', () => {
  it('keeps the single-account data, ids, key and statistics of earlier versions', async () => {
    const emu = await startEmulator({ seed: 4, from: FROM, now: NOW });
    try {
      // Pinned from the emulator before accounts existed (commit 604adff).
      const rs = emu.dataset.sessionsStartedIn(TODAY, NOW);
      expect([rs.length, rs[0]!.id, rs.at(-1)!.id, rs[0]!.started]).toEqual([
        171, '4f8f7ee0-7911-48ca-a46a-dedbef69514b', '403433f9-3447-4205-aa8e-7433c2ab0fc3', 1768435200,
      ]);
      expect(emu.apiKey).toBe('emulator-reporting-key');
      expect(emu.accounts).toEqual([]);
      expect((await post(emu, { query: sessionsQuery(TODAY, TODAY + 3_600) })).status).toBe(200);
      expect(emu.stats()).not.toHaveProperty('accounts');
      expect(() => emu.account('acme')).toThrow(/started without accounts/);
    } finally {
      await emu.close();
    }
  });
});
