/**
 * The rate controller against simulated servers, on a virtual clock: workers call it the way the
 * reporting client and the chunk runner do, so minutes of traffic take milliseconds.
 */
import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/emulator/faults.js';
import { RateController, type RateControllerOptions } from '../../src/pipeline/rate-controller.js';

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
  maxConcurrencySeen: number;
  /** Time spent in beforeAttempt, all attempts together. */
  waitedMs: number;
}

/**
 * `requests` requests through a pool of `controller.concurrency` workers (resized on
 * onConcurrencyChange, as the chunk runner does). Each attempt waits for beforeAttempt, reaches
 * the server 0–10 ms later (a busy event loop, the network), and is answered 15–25 ms after that
 * (a 429 after 2 ms: it has no body to send); the worker waits out a 429's Retry-After too before
 * its retry, as the reporting client does.
 */
async function simulate(o: { server: Server; requests: number; maxConcurrency?: number; options?: Partial<RateControllerOptions>; onTick?: (run: Run) => void }): Promise<Run> {
  const clock = new VirtualClock();
  const maxConcurrency = o.maxConcurrency ?? 4;
  const controller = new RateController({ maxConcurrency, now: () => clock.now, sleep: clock.sleep, ...o.options });
  const run: Run = { controller, clock, start: clock.now, releases: [], accepted: [], pauses: [], maxInFlight: 0, maxConcurrencySeen: controller.concurrency, waitedMs: 0 };
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
      await controller.beforeAttempt();
      run.waitedMs += clock.now - asked;
      run.releases.push(clock.now);
      run.maxInFlight = Math.max(run.maxInFlight, ++inFlight);
      await clock.sleep(random() * 10);
      const retryAfter = o.server.arrive(clock.now);
      await clock.sleep(retryAfter === undefined ? 15 + random() * 10 : 2);
      inFlight--;
      if (retryAfter === undefined) {
        o.server.leave();
        run.accepted.push(clock.now);
        controller.onSuccess();
        return;
      }
      run.pauses.push({ from: clock.now, until: clock.now + retryAfter });
      controller.onRateLimited(retryAfter);
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
    pump();
  };
  pump();
  await clock.runUntil(() => {
    o.onTick?.(run);
    return finished === o.requests;
  });
  return run;
}

/** Accepted answers per second between `fromMs` (after the start) and the end of the run. */
function rateAfter(run: Run, fromMs: number): number {
  const from = run.start + fromMs;
  const n = run.accepted.filter((t) => t > from).length;
  return n / ((run.clock.now - from) / 1000);
}

const share429 = (run: Run) => run.pauses.length / run.releases.length;

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
  it.each([3, 10, 25])('keeps to %i/s: at least 95 percent of the quota after the first seconds, under 1 percent 429s', async (quota) => {
    const run = await simulate({ server: slidingWindow(quota), requests: quota * 200 });
    expect(rateAfter(run, 5_000)).toBeGreaterThanOrEqual(0.95 * quota);
    expect(rateAfter(run, 5_000)).toBeLessThanOrEqual(quota);
    expect(share429(run)).toBeLessThan(0.01);
  });

  it('meets no 429 after the first while it holds the pace', async () => {
    const run = await simulate({ server: slidingWindow(10), requests: 1000 });
    // The first burst ends in one pause (several 429s to the requests that were in flight)...
    const firstPauseEnd = Math.max(...run.pauses.filter((p) => p.from < run.start + 2_000).map((p) => p.until));
    // ...and nothing after it within the 120 s the ceiling is held.
    expect(run.pauses.filter((p) => p.from > firstPauseEnd && p.from < firstPauseEnd + 100_000)).toEqual([]);
    expect(run.controller.pace).toBeCloseTo(9.8, 5);
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
    expect(run.pauses.filter((p) => p.from > run.start + 30_000).length).toBeLessThanOrEqual(5);
  });

  it('finds a limit that is raised, by probing past the ceiling now and then', async () => {
    let quota = 5;
    const run = await simulate({
      server: slidingWindow(() => quota),
      requests: 4000,
      options: { probeAfterMs: 20_000 },
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
