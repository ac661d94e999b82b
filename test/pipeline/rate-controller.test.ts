/**
 * The rate controller against simulated servers, on a virtual clock: workers call it the way the
 * reporting client and the chunk runner do, so minutes of traffic take milliseconds.
 */
import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/emulator/faults.js';
import type { Schedule } from '../../src/emulator/options.js';
import { RateController, type RateControllerOptions } from '../../src/pipeline/rate-controller.js';
import { readRateLimitHeaders, type RateLimitHint } from '../../src/pipeline/rate-limit-headers.js';
import { parseRetryAfter, retryAfterIsDate } from '../../src/reporting/retry-timing.js';

/** Timers that fire in time order, each once every promise reaction before it has run. */
class VirtualClock {
  now = 1_700_000_000_000;
  private timers: Array<{ at: number; seq: number; fire: () => void }> = [];
  private seq = 0;

  sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      this.timers.push({ at: this.now + Math.max(0, ms), seq: this.seq++, fire: resolve });
    });

  async runUntil(done: () => boolean): Promise<void> {
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (done() || this.timers.length === 0) return;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift()!;
      this.now = next.at;
      next.fire();
    }
  }
}

/** Decides each request when it arrives: undefined (accepted) or a Retry-After in ms. */
interface Server {
  arrive(now: number): number | undefined;
  /** An accepted request has been answered. */
  leave(): void;
  /** Rate-limit headers sent with the answer, if the server sends them. */
  hint?(now: number): RateLimitHint | undefined;
  /** Its Retry-After is an HTTP date. */
  date?: boolean;
}

/**
 * The emulator's limiter with a schedule and another client's share: floor(rps) in any sliding
 * second. Headers as the emulator sends them: 'ietf' (RateLimit-*, seconds to the reset rounded
 * up) or 'x' (X-RateLimit-*, the reset as epoch seconds rounded up), both with the limit.
 */
function quota(o: { rps: number; schedule?: Schedule; others?: Schedule; headers?: 'ietf' | 'x'; retryAfterDate?: boolean }): Server {
  const limiter = new RateLimiter(o);
  return {
    arrive(now) {
      const s = limiter.take(now);
      if (s === undefined) return undefined;
      // An HTTP date: the moment the retry is accepted, rounded up to its whole second (as the emulator).
      return o.retryAfterDate ? Math.ceil(limiter.state(now).resetAtMs / 1000) * 1000 - now : s * 1000;
    },
    leave() {},
    date: o.retryAfterDate === true,
    ...(o.headers
      ? {
          hint: (now: number) => {
            const st = limiter.state(now);
            const resetMs = o.headers === 'x' ? Math.ceil(st.resetAtMs / 1000) * 1000 - now : st.resetSeconds * 1000;
            return { remaining: st.remaining, resetMs, limit: st.limit };
          },
        }
      : {}),
  };
}

/** `inner`, plus a 429 with Retry-After 1 s on a random `share` of the requests (seeded). */
function stray429s(inner: Server, share: number, seed = 12_345): Server {
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  return { arrive: (now) => (random() < share ? 1000 : inner.arrive(now)), leave: () => inner.leave() };
}

/** The emulator's own limiter: floor(rps) requests in any sliding second, Retry-After in whole seconds. */
function slidingWindow(rps: number | (() => number)): Server {
  const limiters = new Map<number, RateLimiter>();
  return {
    arrive(now) {
      const r = typeof rps === 'function' ? rps() : rps;
      if (!limiters.has(r)) limiters.set(r, new RateLimiter(r));
      const s = limiters.get(r)!.take(now);
      return s === undefined ? undefined : s * 1000;
    },
    leave() {},
  };
}

/**
 * A fixed window (GitHub's kind): `limit` requests per `windowMs`, windows aligned to the epoch,
 * X-RateLimit-* headers with the window's end as the reset; a 429's Retry-After is the time to it.
 */
function fixedWindow(limit: number, windowMs: number): Server {
  let windowEnd = 0;
  let used = 0;
  const roll = (now: number) => {
    if (now >= windowEnd) {
      windowEnd = (Math.floor(now / windowMs) + 1) * windowMs;
      used = 0;
    }
  };
  return {
    arrive(now) {
      roll(now);
      if (used < limit) return void used++;
      return Math.ceil((windowEnd - now) / 1000) * 1000;
    },
    leave() {},
    hint(now) {
      roll(now);
      return { remaining: limit - used, resetMs: windowEnd - now, limit };
    },
  };
}

function concurrencyLimit(k: number): Server {
  let inFlight = 0;
  return {
    arrive: () => (inFlight >= k ? 1000 : (inFlight++, undefined)),
    leave: () => void inFlight--,
  };
}

const unlimited: Server = { arrive: () => undefined, leave() {} };

interface Run {
  controller: RateController;
  clock: VirtualClock;
  start: number;
  /** When each attempt was let go by the controller. */
  releases: number[];
  /** When each successful answer arrived. */
  accepted: number[];
  /** Each 429: when it arrived and when its Retry-After ends. */
  pauses: Array<{ from: number; until: number }>;
  maxInFlight: number;
  /** Requests in flight (sent, not yet answered) after each release. */
  inFlightAt: Array<{ at: number; n: number }>;
  maxConcurrencySeen: number;
  /** Time spent in beforeAttempt, all attempts together. */
  waitedMs: number;
  concurrencyChanges: Array<{ at: number; n: number }>;
}

/**
 * `requests` requests through a pool of `controller.concurrency` workers (resized on
 * onConcurrencyChange, as the chunk runner does). Each attempt waits for beforeAttempt, reaches
 * the server 0–10 ms later (a busy event loop, the network), and is answered 15–25 ms after that
 * (a 429 after 2 ms: it has no body to send); the worker waits out a 429's Retry-After too before
 * its retry, as the reporting client does.
 */
async function simulate(o: {
  server: Server; requests: number; maxConcurrency?: number; options?: Partial<RateControllerOptions>; onTick?: (run: Run) => void;
  /** Stop after this long (virtual ms) even if requests are left. */
  forMs?: number;
  /** Time to answer an accepted request, ms (it varies by ±25 %). Default 20. */
  latencyMs?: number;
  /** Where in its second the run starts, ms (times stated to the second round differently). Default 0. */
  phaseMs?: number;
}): Promise<Run> {
  const clock = new VirtualClock();
  clock.now += o.phaseMs ?? 0;
  const maxConcurrency = o.maxConcurrency ?? 4;
  const controller = new RateController({ maxConcurrency, now: () => clock.now, sleep: clock.sleep, ...o.options });
  const run: Run = { controller, clock, start: clock.now, releases: [], accepted: [], pauses: [], maxInFlight: 0, inFlightAt: [], maxConcurrencySeen: controller.concurrency, waitedMs: 0, concurrencyChanges: [] };
  let seed = 7;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  let started = 0;
  let finished = 0;
  let active = 0;
  let inFlight = 0;
  let limit = controller.concurrency;

  const request = async () => {
    for (;;) {
      const asked = clock.now;
      const slot = await controller.beforeAttempt();
      run.waitedMs += clock.now - asked;
      run.releases.push(clock.now);
      run.maxInFlight = Math.max(run.maxInFlight, ++inFlight);
      run.inFlightAt.push({ at: clock.now, n: inFlight });
      await clock.sleep(random() * 10);
      const retryAfter = o.server.arrive(clock.now);
      const hint = o.server.hint?.(clock.now);
      await clock.sleep(retryAfter === undefined ? (o.latencyMs ?? 20) * (0.75 + random() / 2) : 2);
      inFlight--;
      if (hint) controller.onRateLimitHint(hint);
      if (retryAfter === undefined) {
        o.server.leave();
        run.accepted.push(clock.now);
        controller.onSuccess();
        slot.release();
        return;
      }
      run.pauses.push({ from: clock.now, until: clock.now + retryAfter });
      controller.onRateLimited(retryAfter, o.server.date);
      slot.release();
      await clock.sleep(retryAfter);
    }
  };
  const pump = () => {
    while (active < limit && started < o.requests) {
      started++;
      active++;
      void request().then(() => {
        active--;
        finished++;
        pump();
      });
    }
  };
  controller.onConcurrencyChange = (n) => {
    limit = n;
    run.maxConcurrencySeen = Math.max(run.maxConcurrencySeen, n);
    run.concurrencyChanges.push({ at: clock.now, n });
    pump();
  };
  pump();
  await clock.runUntil(() => {
    o.onTick?.(run);
    return finished === o.requests || (o.forMs !== undefined && clock.now - run.start >= o.forMs);
  });
  return run;
}

/** Accepted answers per second between `fromMs` (after the start) and the end of the run. */
function rateAfter(run: Run, fromMs: number): number {
  return acceptedBetween(run, fromMs, run.clock.now - run.start) / ((run.clock.now - run.start - fromMs) / 1000);
}

/** Accepted answers between `fromMs` and `toMs` after the start. */
function acceptedBetween(run: Run, fromMs: number, toMs: number): number {
  return run.accepted.filter((t) => t > run.start + fromMs && t <= run.start + toMs).length;
}

/** 429s between `fromMs` and `toMs` after the start. */
function refusedBetween(run: Run, fromMs: number, toMs: number): number {
  return run.pauses.filter((p) => p.from > run.start + fromMs && p.from <= run.start + toMs).length;
}

const share429 = (run: Run) => run.pauses.length / run.releases.length;

/** The pauses of a run, those that overlap merged: one per burst of 429s. */
function bursts(run: Run): Array<{ from: number; until: number }> {
  const merged: Array<{ from: number; until: number }> = [];
  for (const p of run.pauses) {
    const last = merged.at(-1);
    if (last && p.from < last.until) last.until = Math.max(last.until, p.until);
    else merged.push({ ...p });
  }
  return merged;
}

/** The most attempts released within any one second. */
function busiestSecond(run: Run): number {
  let most = 0;
  for (let i = 0, j = 0; i < run.releases.length; i++) {
    while ((run.releases[i] as number) - (run.releases[j] as number) >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('RateController against a sliding-window limit', () => {
  // Was 95 % and under 1 % 429s under a 120 s × 2^n hold. Probing at least every 40 s (to find a
  // raised limit within a minute, issue 14) costs one 429 and its Retry-After per probe, and a limit
  // is believed only when a second burst of 429s agrees: 94–95 % over these 200 s, 1–2 % 429s at 3/s.
  it.each([3, 10, 25])('keeps to %i/s: at least 93 percent of the quota after the first seconds, under 2.5 percent 429s', async (quota) => {
    const run = await simulate({ server: slidingWindow(quota), requests: quota * 200 });
    expect(rateAfter(run, 5_000)).toBeGreaterThanOrEqual(0.93 * quota);
    expect(rateAfter(run, 5_000)).toBeLessThanOrEqual(quota);
    expect(share429(run)).toBeLessThan(0.025);
  });

  it('after the first burst, meets a 429 only when it probes: one burst per longest hold at most', async () => {
    const run = await simulate({ server: slidingWindow(10), requests: 1000 });
    // The first burst ends in one pause (several 429s to the requests that were in flight)...
    const firstPauseEnd = Math.max(...run.pauses.filter((p) => p.from < run.start + 2_000).map((p) => p.until));
    // ...then, once the ceiling is confirmed, probes 20 s apart (the default longest hold).
    const later = run.pauses.filter((p) => p.from > firstPauseEnd + 30_000 && p.from < firstPauseEnd + 90_000);
    const bursts = later.filter((p, i) => i === 0 || p.from >= later[i - 1]!.until);
    expect(bursts.length).toBeLessThanOrEqual(3);
    expect(run.controller.learnedRate).toBeCloseTo(9.8, 5);
  });

  it('learns a limit that drops during the run', async () => {
    let quota = 10;
    const run = await simulate({
      server: slidingWindow(() => quota),
      requests: 1500,
      onTick: (r) => {
        if (r.clock.now - r.start > 30_000) quota = 5;
      },
    });
    expect(rateAfter(run, 60_000)).toBeGreaterThanOrEqual(0.9 * 5);
    // Followed within 5 s; after that, 429s only from probes (was: at most 5, under a 120 s hold).
    const after = run.releases.filter((t) => t > run.start + 35_000).length;
    expect(run.pauses.filter((p) => p.from > run.start + 35_000).length / after).toBeLessThan(0.01);
  });

  it('finds a limit that is raised, by probing past the ceiling now and then', async () => {
    let quota = 5;
    const run = await simulate({
      server: slidingWindow(() => quota),
      requests: 4000,
      onTick: (r) => {
        if (r.clock.now - r.start > 10_000) quota = 10;
      },
    });
    expect(rateAfter(run, 120_000)).toBeGreaterThanOrEqual(0.9 * 10);
    expect(share429(run)).toBeLessThan(0.01);
  });
});

describe('RateController and Retry-After', () => {
  it.each([
    ['a 10/s window', () => slidingWindow(10)],
    ['a 2/s window', () => slidingWindow(2)],
    ['a concurrency limit of 2', () => concurrencyLimit(2)],
  ])('starts no attempt inside a pause (%s)', async (_name, server) => {
    const run = await simulate({ server: server(), requests: 300 });
    expect(run.pauses.length).toBeGreaterThan(0);
    const inside = run.releases.filter((t) => run.pauses.some((p) => t >= p.from && t < p.until));
    expect(inside).toEqual([]);
  });

  it('holds back a worker that was already waiting for its slot when the 429 came', async () => {
    const clock = new VirtualClock();
    const controller = new RateController({ maxConcurrency: 2, now: () => clock.now, sleep: clock.sleep, maxRequestsPerSecond: 10 });
    const start = clock.now;
    await controller.beforeAttempt();
    let releasedAt: number | undefined;
    // The second attempt is given the slot 100 ms on and sleeps towards it...
    void controller.beforeAttempt().then(() => (releasedAt = clock.now));
    // ...when the first one's 429 arrives.
    void clock.sleep(20).then(() => controller.onRateLimited(2_000));
    await clock.runUntil(() => releasedAt !== undefined);
    expect(releasedAt! - start).toBeGreaterThanOrEqual(2_020);
  });

  it('waits out a long Retry-After before any worker tries again', async () => {
    let refused = false;
    const server: Server = {
      arrive: () => {
        if (refused) return undefined;
        refused = true;
        return 30_000;
      },
      leave() {},
    };
    const run = await simulate({ server, requests: 20 });
    const pause = run.pauses[0]!;
    expect(run.releases.filter((t) => t > pause.from).every((t) => t >= pause.until)).toBe(true);
    expect(run.clock.now - run.start).toBeGreaterThanOrEqual(30_000);
  });
});

describe('RateController without a limit', () => {
  it('does not pace before the first 429', async () => {
    const run = await simulate({ server: unlimited, requests: 400 });
    expect(run.controller.pace).toBeUndefined();
    expect(run.waitedMs).toBe(0);
    expect(run.maxInFlight).toBe(4);
  });

  it('paces at maxRequestsPerSecond from the start', async () => {
    const run = await simulate({ server: unlimited, requests: 100, options: { maxRequestsPerSecond: 5 } });
    expect(run.controller.pace).toBe(5);
    // 100 requests at 5/s: 20 s, never more than 5 in any second.
    expect(run.clock.now - run.start).toBeGreaterThanOrEqual(19_800);
    expect(busiestSecond(run)).toBe(5);
  });

  it('keeps to maxRequestsPerSecond under a higher limit of the server, meeting no 429', async () => {
    const run = await simulate({ server: slidingWindow(25), requests: 600, options: { maxRequestsPerSecond: 6 } });
    expect(run.pauses).toEqual([]);
    expect(run.controller.pace).toBe(6);
    expect(busiestSecond(run)).toBe(6);
  });
});

describe('RateController: every attempt gives back its place in flight (real HTTP)', () => {
  // The controller holds an attempt while the allowed concurrency is in flight, so an attempt whose
  // end it never heard of would hold every later one back for ever. The reporting client releases
  // the slot however the attempt ended; these are the endings that once went unreported.
  const FROM = 1767225600; // 2026-01-01
  async function withClient(
    faults: Record<string, unknown>,
    body: (c: { client: import('../../src/reporting/client.js').ReportingClient; controller: RateController }) => Promise<void>,
    extra: { path?: string; maxAttempts?: number; maxRateLimitWaits?: number } = {},
  ): Promise<void> {
    const { withEmulator } = await import('../helpers/emulator-fixture.js');
    const { ReportingClient } = await import('../../src/reporting/client.js');
    const { realSleep } = await import('../../src/util/sleep.js');
    await withEmulator({ seed: 5, from: FROM, to: FROM + 86_400, now: FROM + 2 * 86_400, sessionsPerDay: 20, faults: faults as never }, async (emu) => {
      const controller = new RateController({ maxConcurrency: 1, now: Date.now, sleep: realSleep });
      const hooks = {
        beforeAttempt: (signal?: AbortSignal) => controller.beforeAttempt(signal),
        onSuccess: () => controller.onSuccess(),
        onRateLimited: (ms: number | undefined) => controller.onRateLimited(ms),
      };
      const { path, ...retry } = extra;
      const client = new ReportingClient({ url: new URL(path ?? '/', emu.url).href, apiKey: emu.apiKey, hooks, baseDelayMs: 1, ...retry });
      await body({ client, controller });
      expect(controller.attemptsInFlight).toBe(0);
      // With one allowed in flight, a slot still held would keep this one waiting for ever.
      const ok = new ReportingClient({ url: emu.url, apiKey: emu.apiKey, hooks });
      emu.setFaults({});
      expect((await ok.fetchSessionsBody(FROM, FROM + 3_600)).attempts).toBe(1);
      expect(controller.attemptsInFlight).toBe(0);
    });
  }

  it('after a failure that is not retried (HTTP 404)', async () => {
    await withClient({}, async ({ client }) => {
      await expect(client.fetchSessionsBody(FROM, FROM + 3_600)).rejects.toThrow(/HTTP 404/);
    }, { path: '/nowhere' });
  });

  it('after retries run out (every answer a 500)', async () => {
    await withClient({ serverErrorRate: 1 }, async ({ client }) => {
      await expect(client.fetchSessionsBody(FROM, FROM + 3_600)).rejects.toThrow(/HTTP 50\d/);
    }, { maxAttempts: 3 });
  });

  it('after a request aborted while the server was still answering', async () => {
    await withClient({ latencyMs: 30_000 }, async ({ client, controller }) => {
      const abort = new AbortController();
      const pending = client.fetchSessionsBody(FROM, FROM + 3_600, abort.signal);
      while (controller.attemptsInFlight === 0) await new Promise((r) => setTimeout(r, 5));
      abort.abort(new Error('stopped by the test'));
      await expect(pending).rejects.toThrow('stopped by the test');
    });
  });

  it('after a 429 that used up the waits allowed, and once only when released twice', async () => {
    await withClient({ faultRate: 1, faultKinds: ['rateLimited'] }, async ({ client, controller }) => {
      await expect(client.fetchSessionsBody(FROM, FROM + 3_600)).rejects.toThrow();
      expect(client.counts).toMatchObject({ requests: 1, retries: 0, rateLimited: 1 });
      const slot = await controller.beforeAttempt();
      slot.release();
      slot.release();
      expect(controller.attemptsInFlight).toBe(0);
    }, { maxRateLimitWaits: 0 });
  });

  it('a worker waiting for its turn gives up when its run is aborted', async () => {
    const controller = new RateController({ maxConcurrency: 1, now: Date.now, sleep: async () => {} });
    const held = await controller.beforeAttempt();
    const abort = new AbortController();
    const waiting = controller.beforeAttempt(abort.signal);
    abort.abort(new Error('run aborted'));
    await expect(waiting).rejects.toThrow('run aborted');
    held.release();
    expect(controller.attemptsInFlight).toBe(0);
  });
});

describe('RateController concurrency', () => {
  it.each([
    ['a 10/s window', () => slidingWindow(10)],
    ['a concurrency limit of 2', () => concurrencyLimit(2)],
    ['no limit', () => unlimited],
  ])('never allows more than the maximum in flight (%s)', async (_name, server) => {
    const run = await simulate({ server: server(), requests: 500, maxConcurrency: 3 });
    expect(run.maxConcurrencySeen).toBeLessThanOrEqual(3);
    expect(run.controller.concurrency).toBeLessThanOrEqual(3);
    expect(run.maxInFlight).toBeLessThanOrEqual(3);
  });

  it('copes with a concurrency limit: few 429s, and it finds the throughput the limit allows', async () => {
    // Two at a time, 20 ms each: up to 100 answers a second.
    const run = await simulate({ server: concurrencyLimit(2), requests: 4000 });
    expect(share429(run)).toBeLessThan(0.01);
    expect(rateAfter(run, 40_000)).toBeGreaterThanOrEqual(40);
  });
});

describe('issue 14: the six cases, each against its goal', () => {
  it('1. stray 429s as in the issue (12 in 294 requests, Retry-After 1 s) cost their pauses, not the run', async () => {
    // 4 workers, 90 ms an answer: about 45 requests a second, 6.5 s for the 294 without faults.
    const clean = await simulate({ server: unlimited, requests: 294, latencyMs: 90 });
    const run = await simulate({ server: stray429s(unlimited, 0.04), requests: 294, latencyMs: 90 });
    const cleanMs = clean.clock.now - clean.start;
    const wallMs = run.clock.now - run.start;
    const strays = run.pauses.length;
    expect(strays).toBeGreaterThanOrEqual(8);
    expect(wallMs).toBeLessThanOrEqual(1.5 * cleanMs + strays * 1000 + 2000);
    expect(run.accepted.length).toBe(294);
  });

  // The bench's case R1: 300 requests, 50 ms an answer (about 60 a second), 4 % stray 429s. A 429
  // that comes soon after a pause finds few answers in the second before it (the pause is in that
  // second): such counts agreed with each other and walked the pace down to 11/s (31.6 s for a
  // 25.8 s budget). Several seeds: the strays fall differently each time.
  it.each([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])('1. stray 429s at 60 requests a second cost their pauses, not the pace (seed %i)', async (seed) => {
    const clean = await simulate({ server: unlimited, requests: 300, latencyMs: 50 });
    const run = await simulate({ server: stray429s(unlimited, 0.04, seed * 7_919), requests: 300, latencyMs: 50 });
    const cleanMs = clean.clock.now - clean.start;
    const wallMs = run.clock.now - run.start;
    expect(run.pauses.length).toBeGreaterThanOrEqual(5);
    expect(wallMs).toBeLessThanOrEqual(1.5 * cleanMs + run.pauses.length * 1000 + 2000);
    expect(run.accepted.length).toBe(300);
  });

  // Seeds of that case (of 80 tried) where three weak bursts agreed at 4 to 20 accepted a second
  // while 70 went through when none was refused, and the pace fell to three quarters of that for
  // the rest of the run: 1.04 to 1.5 times the budget. Three weak bursts now set the first ceiling
  // only near the busiest second seen, as a quota's do.
  it.each([33, 37, 53, 55, 66])('1. three weak bursts that agree far under the busiest second are strays, not a limit (seed %i)', async (seed) => {
    const clean = await simulate({ server: unlimited, requests: 300, latencyMs: 50 });
    const run = await simulate({ server: stray429s(unlimited, 0.04, seed * 7_919), requests: 300, latencyMs: 50 });
    const wallMs = run.clock.now - run.start;
    expect(wallMs).toBeLessThanOrEqual(1.5 * (clean.clock.now - clean.start) + run.pauses.length * 1000 + 2000);
    expect(run.accepted.length).toBe(300);
  });

  it('1. strays scattered through a long run cost their pauses and little more', async () => {
    const clean = await simulate({ server: unlimited, requests: 5000, latencyMs: 90 });
    const run = await simulate({ server: stray429s(unlimited, 0.005), requests: 5000, latencyMs: 90 });
    const extra = run.clock.now - run.start - (clean.clock.now - clean.start);
    expect(run.pauses.length).toBeGreaterThanOrEqual(15);
    expect(extra).toBeLessThanOrEqual(run.pauses.length * 1000 + 0.5 * (clean.clock.now - clean.start) + 2000);
  });

  it.each([false, true])('2. a fixed quota of 10/s: at least 90 %% of it, at most 5 %% 429s (Retry-After as an HTTP date: %s)', async (retryAfterDate) => {
    const run = await simulate({ server: quota({ rps: 10, retryAfterDate }), requests: 1500 });
    expect(rateAfter(run, 0)).toBeGreaterThanOrEqual(9);
    expect(share429(run)).toBeLessThanOrEqual(0.05);
  });

  // The other client's refused requests retry, so its share bunches: 98 % of what is left met a
  // 429 every few seconds (a pause each), and a probe from 2/s took 6 s to find the 5/s that came
  // back, at 2/s (84.3 %). A second 429 at the pace within 10 s trims 7 %, probes grow by the
  // highest ceiling learned, and a rise holds as long as a fall: 85.1 % (84.6-85.1 % over other
  // latencies and seeds of this simulation).
  it('3. a shared quota: 10/s of which another client takes 0, 3, 8, 5/s for 30 s each: at least 85 % of what is left, at most 5 % 429s', async () => {
    const others: Schedule = [{ atSeconds: 0, rps: 0 }, { atSeconds: 30, rps: 3 }, { atSeconds: 60, rps: 8 }, { atSeconds: 90, rps: 5 }];
    const run = await simulate({ server: quota({ rps: 10, others }), requests: 100_000, forMs: 120_000 });
    const left = (10 + 7 + 2 + 5) * 30;
    expect(acceptedBetween(run, 0, 120_000) / left).toBeGreaterThanOrEqual(0.85);
    expect(share429(run)).toBeLessThanOrEqual(0.05);
    // Each step, including the step up from 2 to 5, is followed.
    expect(acceptedBetween(run, 100_000, 120_000) / 20).toBeGreaterThanOrEqual(0.8 * 5);
  });

  it('4. a limit that changes 10 → 4 → 10: followed down within seconds and up within a minute', async () => {
    const schedule: Schedule = [{ atSeconds: 0, rps: 10 }, { atSeconds: 30, rps: 4 }, { atSeconds: 60, rps: 10 }];
    const run = await simulate({ server: quota({ rps: 10, schedule }), requests: 100_000, forMs: 120_000 });
    // Down: after 5 s at the lower limit, 429s come from probes only. The halving held the pace at
    // 4.9 when the bursts said 4, and three more agreeing bursts were needed to believe it again
    // (4 429s in 35-60 s, 85.0 %): now the next one is enough (2 429s, 91 %).
    expect(refusedBetween(run, 35_000, 60_000)).toBeLessThanOrEqual(2);
    expect(acceptedBetween(run, 35_000, 60_000) / 25).toBeGreaterThanOrEqual(0.85 * 4);
    // Up: well within a minute of the raise, the run is back near 10/s.
    expect(acceptedBetween(run, 90_000, 120_000) / 30).toBeGreaterThanOrEqual(0.9 * 10);
    expect(share429(run)).toBeLessThanOrEqual(0.05);
  });

  // Bench R3 and R4: a fall needed three weak bursts to agree (each count taken right after the
  // pause of the one before), a 1 s pause each; two that counted exactly the same, with no busier
  // second since the first of them, are believed as before any ceiling: one pause fewer.
  it('4. a limit that falls (10 → 4) is believed at two bursts that count the same: one pause fewer', async () => {
    const schedule: Schedule = [{ atSeconds: 0, rps: 10 }, { atSeconds: 30, rps: 4 }];
    const run = await simulate({ server: quota({ rps: 10, schedule }), requests: 100_000, forMs: 45_000, latencyMs: 1 });
    expect(bursts(run).filter((b) => b.from >= run.start + 30_000)).toHaveLength(3);
    expect(run.controller.learnedRate).toBeCloseTo(3.92, 5);
    expect(acceptedBetween(run, 36_000, 45_000) / 9).toBeGreaterThanOrEqual(0.95 * 4);
  });

  it('5. a concurrency limit of 2 (429 above 2 in flight): settles at 2', async () => {
    const run = await simulate({ server: concurrencyLimit(2), requests: 6000, maxConcurrency: 6 });
    expect(run.controller.concurrency).toBe(2);
    expect(share429(run)).toBeLessThanOrEqual(0.02);
    // Two at a time, 20 ms each: up to 100 answers a second, and no rate limit to keep to.
    expect(rateAfter(run, 20_000)).toBeGreaterThanOrEqual(60);
  });

  // The bench's case R5: 100 ms an answer, so 20/s at best through 2 in flight, 480 requests. The
  // requests refused by the first burst used to retry inside their workers, each retry meeting the
  // limit again (4 pauses of 1 s in the first 4 s): 76 %.
  it('5. a concurrency limit of 2 at 100 ms an answer: at least 85 % of the 20/s it allows, at most 5 % 429s', async () => {
    const run = await simulate({ server: concurrencyLimit(2), requests: 480, latencyMs: 100 });
    const first = run.accepted[0]!;
    const last = run.accepted.at(-1)!;
    expect((run.accepted.length - 1) / ((last - first) / 1000)).toBeGreaterThanOrEqual(0.85 * 20);
    expect(share429(run)).toBeLessThanOrEqual(0.05);
    // Each burst pauses every worker for a second: the first, and one probe of 3 in flight in these
    // 26 s (4 in flight with 2 refused says 3 is too many: no probe of 3 a second later, and
    // several refused at once hold the limit 16 s before the first probe).
    expect(bursts(run).length).toBeLessThanOrEqual(2);
  });

  it('5. once a concurrency limit is found, the retries of the refused requests keep to it', async () => {
    const run = await simulate({ server: concurrencyLimit(2), requests: 400, latencyMs: 100, maxConcurrency: 4 });
    const firstPause = run.pauses[0]!;
    // After the first burst's pause, until the first probe of 3: never more than 2 in flight.
    const probe = run.concurrencyChanges.find((c) => c.n > 2)?.at ?? Infinity;
    expect(run.inFlightAt.filter((x) => x.at >= firstPause.until && x.at < probe).every((x) => x.n <= 2)).toBe(true);
    expect(run.pauses.filter((p) => p.from >= firstPause.until && p.from < probe)).toEqual([]);
  });

  it('6. RateLimit-Remaining/Reset headers: slows down before the first 429', async () => {
    const run = await simulate({ server: quota({ rps: 10, headers: 'ietf' }), requests: 300 });
    expect(run.pauses.length).toBeLessThanOrEqual(1);
    expect(rateAfter(run, 0)).toBeGreaterThanOrEqual(9);
  });

  // Bench R6: an epoch reset to the second says "somewhere in the second before this": pausing
  // until it whenever Remaining hit 0 lasted up to a second too long each time (10 requests, then
  // a pause of 1-2 s: 53-65 %). Pacing at Limit over the window learned from the resets, and
  // pausing only when requests other than ours used the quota up, keeps the quota full.
  it('6. X-RateLimit-Remaining/-Reset (epoch seconds, rounded up) and -Limit: at least 90 % of 10/s, at most 4 429s', async () => {
    const run = await simulate({ server: quota({ rps: 10, headers: 'x' }), requests: 300, latencyMs: 5 });
    expect(rateAfter(run, 0)).toBeGreaterThanOrEqual(9);
    expect(run.pauses.length).toBeLessThanOrEqual(4);
  });

  it('6. a fixed window stated in the headers (30 a minute): no request before its reset once it ran out, at least 90 % of it', async () => {
    const run = await simulate({ server: fixedWindow(30, 60_000), requests: 200, latencyMs: 50, forMs: 300_000 });
    expect(run.pauses.length).toBeLessThanOrEqual(4);
    // From the first full window on: 30 a minute at least 90 % of the time.
    const firstEnd = (Math.floor(run.start / 60_000) + 1) * 60_000 - run.start;
    expect(acceptedBetween(run, firstEnd, firstEnd + 180_000)).toBeGreaterThanOrEqual(0.9 * 90);
  });

  it('6. the headers, draft and X- forms, seconds or an epoch time', () => {
    const now = 1_700_000_000_000;
    const h = (o: Record<string, string>) => new Headers(o);
    expect(readRateLimitHeaders(h({ 'RateLimit-Remaining': '3', 'RateLimit-Reset': '2' }), now)).toEqual({ remaining: 3, resetMs: 2000 });
    expect(readRateLimitHeaders(h({ 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(now / 1000 + 5) }), now)).toEqual({ remaining: 0, resetMs: 5000 });
    expect(readRateLimitHeaders(h({ RateLimit: 'x', 'RateLimit-Remaining': '7, 50;w=60', 'RateLimit-Reset': '1' }), now)).toEqual({ remaining: 7, resetMs: 1000 });
    expect(readRateLimitHeaders(h({ 'RateLimit-Remaining': 'lots', 'RateLimit-Reset': '1' }), now)).toBeUndefined();
    expect(readRateLimitHeaders(h({ 'X-RateLimit-Limit': '5000', 'X-RateLimit-Remaining': '4999', 'X-RateLimit-Reset': String(now / 1000 + 3600) }), now)).toEqual({ remaining: 4999, resetMs: 3_600_000, limit: 5000 });
    expect(readRateLimitHeaders(h({}), now)).toBeUndefined();
  });

  it('6. Remaining 0 pauses every worker until the reset, without a 429', async () => {
    const clock = new VirtualClock();
    const controller = new RateController({ maxConcurrency: 2, now: () => clock.now, sleep: clock.sleep });
    const start = clock.now;
    controller.onRateLimitHint({ remaining: 0, resetMs: 3000 });
    let releasedAt: number | undefined;
    void controller.beforeAttempt().then(() => (releasedAt = clock.now));
    await clock.runUntil(() => releasedAt !== undefined);
    expect(releasedAt! - start).toBe(3000);
    expect(controller.pausedMs).toBe(3000);
  });

  it('6. a stated quota used up by requests other than ours pauses every worker until the reset', async () => {
    const clock = new VirtualClock();
    const controller = new RateController({ maxConcurrency: 2, now: () => clock.now, sleep: clock.sleep });
    const start = clock.now;
    // One request of ours in flight; the server counts all 10 of the quota.
    const slot = await controller.beforeAttempt();
    controller.onRateLimitHint({ remaining: 0, resetMs: 3000, limit: 10 });
    controller.onSuccess();
    slot.release();
    let releasedAt: number | undefined;
    void controller.beforeAttempt().then(() => (releasedAt = clock.now));
    await clock.runUntil(() => releasedAt !== undefined);
    expect(releasedAt! - start).toBe(3000);
  });

  // Issue 41 (the rate family, seed 20): paced at a stated Limit of 2 a second, the quota never ran
  // out again, so a Limit raised to 5 was never read: 40 % of the raised quota used, for good.
  it('6. a stated Limit that is raised (or lowered) is followed at once, not only when it runs out again', async () => {
    const clock = new VirtualClock();
    const controller = new RateController({ maxConcurrency: 2, now: () => clock.now, sleep: clock.sleep });
    const slot = await controller.beforeAttempt();
    controller.onRateLimitHint({ remaining: 0, resetMs: 1000, limit: 2 });
    controller.onSuccess();
    slot.release();
    expect(controller.pace).toBeCloseTo(1.96, 5);
    controller.onRateLimitHint({ remaining: 3, resetMs: 1000, limit: 5 });
    expect(controller.pace).toBeCloseTo(4.9, 5);
    controller.onRateLimitHint({ remaining: 1, resetMs: 1000, limit: 3 });
    expect(controller.pace).toBeCloseTo(2.94, 5);
  });

  // Bench R6: the emulator stated the date as now + the whole seconds to wait, rounded up again
  // (up to 2 s late; 84.6 % in the bench, 86.5 % here). Rounded up once, as a server would state
  // the moment it takes the retry, a date costs about what whole seconds do (90.3 % here; 94.5 %
  // since a first burst that refused every request in flight is believed at once, below).
  it('6. Retry-After as an HTTP date: 200 requests against 10/s from any phase of a second: at least 90 %, at most 5 % 429s', async () => {
    const rates: number[] = [];
    for (const phaseMs of [0, 250, 500, 750]) {
      const run = await simulate({ server: quota({ rps: 10, retryAfterDate: true }), requests: 200, latencyMs: 3, phaseMs });
      rates.push((run.accepted.length - 1) / ((run.accepted.at(-1)! - run.accepted[0]!) / 1000));
      expect(share429(run)).toBeLessThanOrEqual(0.05);
    }
    expect(rates.reduce((a, b) => a + b) / rates.length).toBeGreaterThanOrEqual(9);
  });

  // The first burst of a run was weak evidence however it looked (its second began before the first
  // request), so the run went on unpaced, met the limit again at once and paused a second time
  // (up to 2 s each with a date: two of the 20 s of this case). When every request in flight at the
  // first 429 is refused too, the window was full, not a stray: the limit is believed at once.
  it('6. a first burst that refused every request in flight is believed at once: one pause to start, not two', async () => {
    for (const retryAfterDate of [false, true]) {
      const run = await simulate({ server: quota({ rps: 10, retryAfterDate }), requests: 200, latencyMs: 3 });
      expect(bursts(run).filter((b) => b.from < run.start + 10_000)).toHaveLength(1);
      expect(run.controller.learnedRate).toBeCloseTo(9.8, 5);
    }
  });

  // Bench R6 over loopback: the emulator answers in a millisecond and the run's commits keep one
  // request in flight at a time, so the rule above never fires; three weak bursts to agree cost two
  // more pauses of up to 2 s each with a date (85.7 % of the quota). Two that counted the same, with
  // no busier second in the run, are believed: one pause less.
  it.each([false, true])('6. one request in flight at a time: two bursts that count the same as the busiest second are believed, not three (Retry-After as an HTTP date: %s)', async (retryAfterDate) => {
    const run = await simulate({ server: quota({ rps: 10, retryAfterDate }), requests: 200, latencyMs: 1, maxConcurrency: 1 });
    expect(bursts(run).filter((b) => b.from < run.start + 10_000)).toHaveLength(2);
    expect(run.controller.learnedRate).toBeCloseTo(9.8, 5);
    expect((run.accepted.length - 1) / ((run.accepted.at(-1)! - run.accepted[0]!) / 1000)).toBeGreaterThanOrEqual(8.8);
  });

  // With one request in flight the second look at the limit was a burst sent at once when the first
  // pause ended (on a whole second, as a date is): refused at once again, its date was a second after
  // the window's first request rounded up, two seconds away. A trial paces one window at the first
  // burst's count, then faster: its 429 comes with the window spread and waits for the next whole
  // second only (90.0 % → 91.7 % of the quota over ten phases of the second on this clock).
  it('6. Retry-After as an HTTP date, one request in flight: the second look is a paced trial, and its 429 waits for the next whole second, not two', async () => {
    const rates: number[] = [];
    for (const phaseMs of [0, 250, 500, 750]) {
      const run = await simulate({ server: quota({ rps: 10, retryAfterDate: true }), requests: 200, latencyMs: 1, maxConcurrency: 1, phaseMs });
      const [first, second] = bursts(run);
      expect(second!.from - first!.until).toBeGreaterThan(1000); // a window paced, not sent at once
      expect(second!.until - second!.from).toBeLessThan(1000);
      expect(run.controller.learnedRate).toBeCloseTo(9.8, 5);
      rates.push((run.accepted.length - 1) / ((run.accepted.at(-1)! - run.accepted[0]!) / 1000));
    }
    expect(rates.reduce((a, b) => a + b) / rates.length).toBeGreaterThanOrEqual(9.1);
  });

  it('6. a trial whose window passes without a 429 was a stray: the run goes on unpaced', async () => {
    // One 429 (an HTTP date) after 10 answers, then none: the trial paces 10/s for a second, doubles,
    // and lets go; the 290 requests left take 2 s of trial and ~2 s unpaced, not 29 s at 10/s.
    let n = 0;
    const server: Server = { arrive: (now) => (++n === 11 ? Math.ceil((now + 1000) / 1000) * 1000 - now : undefined), leave() {}, date: true };
    const run = await simulate({ server, requests: 300, latencyMs: 1, maxConcurrency: 1 });
    expect(run.pauses).toHaveLength(1);
    expect(run.controller.learnedRate).toBeNull();
    expect(run.accepted.at(-1)! - run.pauses[0]!.until).toBeLessThan(6000);
  });

  it('6. two bursts that count the same are not believed when a second of the run saw more accepted', async () => {
    // 40 accepted as fast as they go, then a 429; then twice 10 accepted and a 429: the last two agree,
    // but 40 in one second says the server takes more than 10 a second (stray 429s, not a quota).
    const refuse = new Set([41, 52, 63]);
    let n = 0;
    const server: Server = { arrive: () => (refuse.has(++n) ? 1000 : undefined), leave() {} };
    const run = await simulate({ server, requests: 70, latencyMs: 1, maxConcurrency: 1 });
    expect(run.pauses).toHaveLength(3);
    expect(run.controller.learnedRate).toBeNull();
  });

  it('6. Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-23T13:00:00Z');
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter('Mon, 23 Nov 2026 13:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Mon, 23 Nov 2026 12:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect([retryAfterIsDate('2'), retryAfterIsDate('Mon, 23 Nov 2026 13:00:05 GMT'), retryAfterIsDate('soon'), retryAfterIsDate(null)]).toEqual([false, true, false, false]);
  });
});

describe('RateController reports what it did', () => {
  it('counts the time paused and the pace learned; none of it when never limited', async () => {
    const free = await simulate({ server: unlimited, requests: 100 });
    expect(free.controller.pausedMs).toBe(0);
    expect(free.controller.learnedRate).toBeNull();
    const run = await simulate({ server: quota({ rps: 5 }), requests: 200 });
    expect(run.controller.learnedRate).toBeGreaterThan(4);
    expect(run.controller.learnedRate).toBeLessThanOrEqual(5);
    // Every burst's pause, counted once however many 429s it held.
    const merged: Array<{ from: number; until: number }> = [];
    for (const p of run.pauses) {
      const last = merged.at(-1);
      if (last && p.from < last.until) last.until = Math.max(last.until, p.until);
      else merged.push({ ...p });
    }
    expect(run.controller.pausedMs).toBe(merged.reduce((ms, p) => ms + p.until - p.from, 0));
  });
});

describe('a run reports its rate control (real HTTP, real store)', () => {
  it('the summary, the _runs table and status give the 429s met, the time paused and the pace learned', async () => {
    const { withEmulator } = await import('../helpers/emulator-fixture.js');
    const { runBackfill } = await import('../../src/pipeline/run.js');
    const { readStatus } = await import('../../src/store/status.js');
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const FROM = 1767225600; // 2026-01-01
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-rate-'));
    try {
      await withEmulator({ seed: 4, from: FROM, to: FROM + 4 * 86_400, now: FROM + 5 * 86_400, sessionsPerDay: 20 }, async (emu) => {
        const opts = { reportingUrl: emu.url, apiKey: emu.apiKey, format: 'duckdb' as const, from: FROM, to: FROM + 2 * 86_400, chunkSeconds: 7_200 };
        const free = await runBackfill({ ...opts, dataDir: join(dir, 'free') });
        expect(free).toMatchObject({ rateLimited: 0, pausedMs: 0, pace: null });
        emu.setFaults({ rateLimitRps: 8 });
        const limited = await runBackfill({ ...opts, dataDir: join(dir, 'limited') });
        expect(limited.rateLimited).toBeGreaterThan(0);
        // Every 429 of the emulator's refused Retry-After: 1 s or more, so at least a second paused.
        expect(limited.pausedMs).toBeGreaterThanOrEqual(1000);
        expect(limited.pausedMs).toBeLessThan(limited.durationMs);
        expect(limited.pace).toBeGreaterThan(4);
        expect(limited.pace).toBeLessThanOrEqual(8);
        expect(limited.sessions.new).toBe(free.sessions.new);
        const status = await readStatus(join(dir, 'limited'));
        expect(status.lastRuns[0]).toMatchObject({ rate_limited: limited.rateLimited, paused_ms: limited.pausedMs, pace: limited.pace });
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
