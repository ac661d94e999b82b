/**
 * The rate-control family (issue 41): seeded servers on a virtual clock, the rate controller driven
 * as the reporting client and the chunk runner drive it, and the goals of issue 41 measured over
 * the family, separately for the servers that send rate-limit headers and those that do not.
 *
 * Nothing here touches a real timer: `VirtualClock` runs every sleep in time order, so a minute of
 * traffic takes milliseconds. Importing the module has no side effects (test/pipeline/rate-family
 * .test.ts runs a slice; `npm run bench -- --only rate-family` runs 500 seeds, see bench/run.ts).
 *
 * A scenario (one seed):
 * - a quota: a sliding window (1 or 2 s), a fixed window (1, 2 or 10 s, aligned to the epoch) or a
 *   token bucket (its burst 1–20 s of its rate), of 1 to 40 requests a second and at most 70 % of
 *   what the client could send (a concurrency story: 1.2 × that, so the limit in flight binds);
 * - one of: steady; a drop to 30–70 % for 10–20 s, then back; a raise to 1.5–3 ×; another client
 *   taking 20–60 % of it for 15–25 s (a quota of at least 4 a second); a concurrency limit (1 to maxConcurrency − 1 in flight) that
 *   goes away after 10–20 s;
 * - rate-limit headers (half of the seeds: `RateLimit-*` with seconds to the reset, or
 *   `X-RateLimit-*` with the reset as epoch seconds, both with the Limit), or none;
 * - a Retry-After on every 429, in seconds, or (one server in five) as an HTTP date;
 * - stray 429s (half of the seeds) on 0–10 % of answers, Retry-After 1–2 s, which do not use the
 *   quota; they carry the headers as the quota stands. The simulator marks them, so that the 429
 *   share counts only refusals of the quota;
 * - a latency of 20–400 ms (log-uniform), ±25 % per request; a 429 comes back in 2 ms;
 * - a client of 2, 4 or 8 workers doing about 40 s of work (at the quota) in one request each.
 */
import { Random } from '../src/emulator/prng.js';
import { RateController } from '../src/pipeline/rate-controller.js';
import { readRateLimitHeaders } from '../src/pipeline/rate-limit-headers.js';
import { parseRetryAfter, retryAfterIsDate } from '../src/reporting/retry-timing.js';

// ---- the virtual clock ---------------------------------------------------------------------------

/** Timers that fire in time order (then in the order they were set), each after every promise reaction before it. */
export class VirtualClock {
  now: number;
  private heap: Array<{ at: number; seq: number; fire: () => void }> = [];
  private seq = 0;

  constructor(start: number) {
    this.now = start;
  }

  sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      this.push({ at: this.now + Math.max(0, ms), seq: this.seq++, fire: resolve });
    });

  /** Runs timers until `done()` or none is left, or the clock passes `untilMs`. */
  async run(done: () => boolean, untilMs: number): Promise<void> {
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (done() || this.heap.length === 0) return;
      const t = this.pop();
      if (t.at > untilMs) return;
      this.now = t.at;
      t.fire();
    }
  }

  private less(i: number, j: number): boolean {
    const a = this.heap[i]!;
    const b = this.heap[j]!;
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(t: { at: number; seq: number; fire: () => void }): void {
    const h = this.heap;
    h.push(t);
    for (let i = h.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): { at: number; seq: number; fire: () => void } {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length) {
      h[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(l, m)) m = l;
        if (r < h.length && this.less(r, m)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

// ---- the family ------------------------------------------------------------------------------------

export type QuotaKind = 'sliding' | 'fixed' | 'bucket';
export type Story = 'steady' | 'drop' | 'raise' | 'shared' | 'concurrency';

export interface Scenario {
  seed: number;
  kind: QuotaKind;
  /** Requests per window (the bucket's burst for a token bucket). */
  limit: number;
  /** The window, ms (a bucket: the time to refill `limit`). */
  windowMs: number;
  story: Story;
  /** The story's change begins and ends, ms after the start (raise: ends never). */
  fromMs: number;
  toMs: number;
  /** drop/raise: the quota's factor then; shared: the other client's share; concurrency: requests allowed in flight. */
  factor: number;
  headers: 'ietf' | 'x' | undefined;
  retryAfterDate: boolean;
  /** Share of answers that are stray 429s. */
  strays: number;
  latencyMs: number;
  maxConcurrency: number;
  requests: number;
}

/** The quota's rate in requests a second. */
const rateOf = (limit: number, windowMs: number) => (limit * 1000) / windowMs;

/** The scenario of a seed. */
export function scenarioOf(seed: number): Scenario {
  const r = new Random(0x41, seed);
  const kind = r.pick(['sliding', 'sliding', 'fixed', 'bucket'] as const);
  const story = r.pick(['steady', 'drop', 'drop', 'raise', 'shared', 'concurrency'] as const);
  const maxConcurrency = r.pick([2, 4, 8]);
  const latencyMs = 20 * Math.exp(r.next() * Math.log(20));
  const capacity = (maxConcurrency * 1000) / latencyMs;
  const factor = story === 'drop' ? 0.3 + 0.4 * r.next() : story === 'raise' ? 1.5 + 1.5 * r.next() : story === 'shared' ? 0.2 + 0.4 * r.next() : 1 + r.int(maxConcurrency - 1);
  const most = 0.7 * capacity / (story === 'raise' ? factor : 1);
  // A concurrency story's quota is above what the client can send: the limit in flight binds.
  // A shared quota is at least 4 a second: one or two a second shared by two evenly paced clients
  // collide by their phases alone (a client that knew the quota met 10-16 % of 429s there).
  const rate = story === 'concurrency' ? 1.2 * capacity : Math.max(story === 'shared' ? 4 : 1, Math.min(40, most) * (0.05 + 0.95 * r.next()));
  const windowMs = kind === 'sliding' ? r.pick([1000, 1000, 2000]) : kind === 'fixed' ? r.pick([1000, 2000, 10_000]) : Math.round(1000 * (1 + 19 * r.next()));
  const limit = Math.max(1, Math.round((rate * windowMs) / 1000));
  const fromMs = 10_000 + 10_000 * r.next();
  const toMs = story === 'raise' ? Infinity : fromMs + (story === 'shared' ? 15_000 + 10_000 * r.next() : 10_000 + 10_000 * r.next());
  const headers = r.chance(0.5) ? r.pick(['ietf', 'x'] as const) : undefined;
  const retryAfterDate = r.chance(0.2);
  const strays = r.chance(0.5) ? 0.1 * r.next() : 0;
  const s: Scenario = { seed, kind, limit, windowMs, story, fromMs, toMs, factor, headers, retryAfterDate, strays, latencyMs, maxConcurrency, requests: 0 };
  // About 40 s of work at what could be used (a concurrency story: 30 s after its limit goes away).
  s.requests = Math.max(20, Math.round(usable(s, 0, story === 'concurrency' ? fromMs + 30_000 : 40_000)));
  return s;
}

/** The quota's rate at `t` (ms after the start) for us, requests a second: the server's, less another client's share. */
export function quotaRateAt(s: Scenario, t: number): number {
  const base = rateOf(s.limit, s.windowMs);
  const during = t >= s.fromMs && t < s.toMs;
  if (!during) return base;
  if (s.story === 'drop' || s.story === 'raise') return rateOf(limitAt(s, t), s.windowMs);
  if (s.story === 'shared') return base * (1 - s.factor);
  return base;
}

function limitAt(s: Scenario, t: number): number {
  if ((s.story === 'drop' || s.story === 'raise') && t >= s.fromMs && t < s.toMs) return Math.max(1, Math.round(s.limit * s.factor));
  return s.limit;
}

/** What the client can send at `t`: its workers over the latency (fewer under a concurrency limit). */
export function capacityAt(s: Scenario, t: number): number {
  const n = s.story === 'concurrency' && t < s.fromMs ? s.factor : s.maxConcurrency;
  return (n * 1000) / s.latencyMs;
}

/** Requests that could be accepted over [a, b) ms: the lesser of the quota and the client's capacity, second by second. */
export function usable(s: Scenario, a: number, b: number): number {
  let n = 0;
  for (let t = a; t < b; t += 100) {
    const dt = Math.min(100, b - t);
    n += (Math.min(quotaRateAt(s, t), capacityAt(s, t)) * dt) / 1000;
  }
  return n;
}

// ---- the server --------------------------------------------------------------------------------------

interface Answer {
  status: 200 | 429;
  stray: boolean;
  headers: Map<string, string>;
}

class Server {
  private stamps: number[] = [];
  private windowEnd = 0;
  private used = 0;
  private tokens: number;
  private lastFill = 0;
  private nextOther: number;
  inFlight = 0;

  constructor(private readonly s: Scenario, private readonly start: number) {
    this.tokens = s.limit;
    this.nextOther = s.fromMs;
  }

  /** Decides a request arriving at `now` (it stays in flight until `leave`). */
  arrive(now: number, stray: boolean, strayMs = 1000): Answer {
    const t = now - this.start;
    this.others(now);
    const limit = limitAt(this.s, t);
    let retryMs: number | undefined;
    if (stray) retryMs = undefined;
    else if (this.s.story === 'concurrency' && t < this.s.fromMs && this.inFlight >= this.s.factor) retryMs = 1000;
    else retryMs = this.take(now, limit);
    const state = this.state(now, limit);
    const headers = new Map<string, string>();
    if (this.s.headers) {
      const p = this.s.headers === 'ietf' ? 'ratelimit-' : 'x-ratelimit-';
      headers.set(`${p}limit`, String(limit));
      headers.set(`${p}remaining`, String(state.remaining));
      headers.set(`${p}reset`, String(this.s.headers === 'ietf' ? Math.ceil(state.resetMs / 1000) : Math.ceil((now + state.resetMs) / 1000)));
    }
    if (stray || retryMs !== undefined) {
      const ms = stray ? strayMs : Math.max(1000, Math.ceil(retryMs! / 1000) * 1000);
      headers.set('retry-after', this.s.retryAfterDate ? new Date(Math.ceil((now + (stray ? ms : retryMs!)) / 1000) * 1000).toUTCString() : String(ms / 1000));
      return { status: 429, stray, headers };
    }
    this.inFlight++;
    return { status: 200, stray: false, headers };
  }

  leave(): void {
    this.inFlight--;
  }

  /** Takes one from the quota, or says how long until there is room, ms. */
  private take(now: number, limit: number): number | undefined {
    const s = this.s;
    if (s.kind === 'sliding') {
      this.drop(now);
      if (this.stamps.length < limit) return void this.stamps.push(now);
      return this.stamps[this.stamps.length - limit]! + s.windowMs - now;
    }
    if (s.kind === 'fixed') {
      this.roll(now);
      if (this.used < limit) return void this.used++;
      return this.windowEnd - now;
    }
    this.fill(now, limit);
    if (this.tokens >= 1) return void this.tokens--;
    return ((1 - this.tokens) * s.windowMs) / limit;
  }

  private state(now: number, limit: number): { remaining: number; resetMs: number } {
    const s = this.s;
    if (s.kind === 'sliding') {
      this.drop(now);
      return { remaining: Math.max(0, limit - this.stamps.length), resetMs: this.stamps.length ? this.stamps[0]! + s.windowMs - now : 0 };
    }
    if (s.kind === 'fixed') return { remaining: Math.max(0, limit - this.used), resetMs: this.windowEnd - now };
    return { remaining: Math.floor(this.tokens), resetMs: ((limit - this.tokens) * s.windowMs) / limit };
  }

  private drop(now: number): void {
    let i = 0;
    while (i < this.stamps.length && this.stamps[i]! <= now - this.s.windowMs) i++;
    if (i) this.stamps.splice(0, i);
  }

  private roll(now: number): void {
    if (now >= this.windowEnd) {
      this.windowEnd = (Math.floor(now / this.s.windowMs) + 1) * this.s.windowMs;
      this.used = 0;
    }
  }

  private fill(now: number, limit: number): void {
    this.tokens = Math.min(limit, this.tokens + ((now - this.lastFill) * limit) / this.s.windowMs);
    this.lastFill = now;
  }

  /** The other client of a shared quota: evenly paced at its share, taking room when there is some. */
  private others(now: number): void {
    const s = this.s;
    if (s.story !== 'shared') return;
    const rate = rateOf(s.limit, s.windowMs) * s.factor;
    while (this.nextOther < s.toMs && this.start + this.nextOther <= now) {
      const at = this.start + this.nextOther;
      this.take(at, s.limit);
      this.nextOther += 1000 / rate;
    }
  }
}

// ---- one run -----------------------------------------------------------------------------------------

/** A second of a run, for the figure. */
export interface Second {
  t: number;
  accepted: number;
  refused: number;
  strays: number;
  /** The quota usable then, requests a second. */
  usable: number;
  /** The controller's pace at the second's end (undefined: unpaced). */
  pace: number | undefined;
  concurrency: number;
}

export interface RunResult {
  /** ms from the start to the last answer. */
  durationMs: number;
  attempts: number;
  accepted: number;
  quota429: number;
  stray429: number;
  /** The strays' Retry-After, all together, ms. */
  strayRetryMs: number;
  /** Answers accepted over [from+5 s, from+10 s) (after a raise, or after a concurrency limit went away), and the usable then. */
  raisedAccepted: number;
  raisedUsable: number;
  /** Concurrency lowered below maxConcurrency at some point, and when it was back at it after the story's end. */
  lowered: boolean;
  restoredAtMs: number | undefined;
  seconds: Second[];
  finished: boolean;
  /** The quota's 429s by what caused them (see `Cause`). */
  quota429By: Record<Cause, number>;
}

/**
 * What a quota 429 came from, judged when its request was let go: `probe`, the controller was looking
 * past the limit it had learned (its `phase`); `lowered`, the quota for us stood below the one before
 * (a drop, or another client's share) — the controller meeting a lower quota; `learning`, the
 * controller had learned no limit yet (its `phase`, or no pace); `steady`, the rest (at the pace it
 * learned: timing, a limit learned too high, the quota come back).
 */
export type Cause = 'learning' | 'probe' | 'lowered' | 'steady';
export const CAUSES: readonly Cause[] = ['learning', 'probe', 'lowered', 'steady'];

/** What the client and the pool use of a controller (RateController, or another under test). */
export type FamilyController = Pick<RateController, 'beforeAttempt' | 'onSuccess' | 'onRateLimited' | 'onRateLimitHint' | 'concurrency' | 'pace' | 'onConcurrencyChange'> & {
  /** For the diagnostic only (a controller need not say): learning its first limit, probing past it, or neither. */
  readonly phase?: 'learning' | 'probing' | 'steady';
};

export type ControllerFactory = (o: { maxConcurrency: number; now: () => number; sleep: (ms: number, signal?: AbortSignal) => Promise<void> }) => FamilyController;

const START = 1_700_000_000_000;
/** A run that has not finished by then is cut (and counted as it stands). */
const LIMIT_MS = 600_000;

/**
 * One scenario, the client as the pipeline drives it: a pool of `controller.concurrency` workers
 * (resized on onConcurrencyChange, as extract.ts's pLimit), each request through the reporting
 * client's loop (beforeAttempt; the answer's headers read by readRateLimitHeaders and given to
 * onRateLimitHint; onSuccess or onRateLimited with Retry-After parsed as the client parses it; the
 * slot released; after a 429, a sleep of its Retry-After before the retry).
 */
export async function runScenario(s: Scenario, o: { strays?: boolean; controller?: ControllerFactory } = {}): Promise<RunResult> {
  const clock = new VirtualClock(START + (s.seed % 1000));
  const start = clock.now;
  const make: ControllerFactory = o.controller ?? ((c) => new RateController(c));
  const controller = make({ maxConcurrency: s.maxConcurrency, now: () => clock.now, sleep: clock.sleep });
  const server = new Server(s, start);
  const latency = new Random(0x42, s.seed);
  const strayDraw = new Random(0x43, s.seed);
  const strayShare = o.strays === false ? 0 : s.strays;
  const res: RunResult = {
    durationMs: 0, attempts: 0, accepted: 0, quota429: 0, stray429: 0, strayRetryMs: 0, raisedAccepted: 0, raisedUsable: 0,
    lowered: false, restoredAtMs: undefined, seconds: [], finished: false, quota429By: { learning: 0, probe: 0, lowered: 0, steady: 0 },
  };
  const causeNow = (): Cause => {
    const t = clock.now - start;
    const phase = controller.phase ?? (controller.pace === undefined ? 'learning' : 'steady');
    if (phase === 'probing') return 'probe';
    if ((s.story === 'drop' || s.story === 'shared') && t >= s.fromMs && t < s.toMs) return 'lowered';
    return phase === 'learning' ? 'learning' : 'steady';
  };
  const second = (now: number): Second => {
    const i = Math.floor((now - start) / 1000);
    while (res.seconds.length <= i) {
      const t = res.seconds.length;
      res.seconds.push({ t, accepted: 0, refused: 0, strays: 0, usable: usable(s, t * 1000, t * 1000 + 1000), pace: undefined, concurrency: s.maxConcurrency });
    }
    return res.seconds[i]!;
  };

  let started = 0;
  let finished = 0;
  let active = 0;
  let poolSize = Math.max(1, controller.concurrency);
  controller.onConcurrencyChange = (n) => {
    poolSize = Math.max(1, Math.min(s.maxConcurrency, n));
    const t = clock.now - start;
    if (n < s.maxConcurrency) res.lowered = true;
    // Back at the configured concurrency once the limit is gone (or already back when it went).
    else if (res.lowered && res.restoredAtMs === undefined && s.story === 'concurrency') res.restoredAtMs = Math.max(t, s.fromMs);
    if (n < s.maxConcurrency && t < s.fromMs) res.restoredAtMs = undefined;
    fill();
  };

  const request = async (): Promise<void> => {
    for (;;) {
      const slot = await controller.beforeAttempt();
      const cause = causeNow();
      res.attempts++;
      // Half the latency out, half back; a 429 has no body and comes back at once.
      const lat = s.latencyMs * (0.75 + 0.5 * latency.next());
      await clock.sleep(lat / 2);
      const stray = strayShare > 0 && strayDraw.chance(strayShare);
      const answer = server.arrive(clock.now, stray, stray ? 1000 * (1 + strayDraw.int(2)) : 1000);
      await clock.sleep(answer.status === 200 ? lat / 2 : 2);
      const now = clock.now;
      const headers = { get: (name: string) => answer.headers.get(name.toLowerCase()) ?? null };
      const hint = readRateLimitHeaders(headers, now);
      if (hint) controller.onRateLimitHint(hint);
      const sec = second(now);
      if (answer.status === 200) {
        server.leave();
        controller.onSuccess();
        slot.release();
        res.accepted++;
        sec.accepted++;
        const t = now - start;
        if ((s.story === 'raise' || s.story === 'concurrency') && t >= s.fromMs + 5000 && t < s.fromMs + 10_000) res.raisedAccepted++;
        return;
      }
      const retry = headers.get('retry-after');
      const retryMs = parseRetryAfter(retry, now);
      controller.onRateLimited(retryMs, retryAfterIsDate(retry));
      slot.release();
      if (answer.stray) {
        res.stray429++;
        res.strayRetryMs += retryMs ?? 1000;
        sec.strays++;
      } else {
        res.quota429++;
        res.quota429By[cause]++;
        sec.refused++;
      }
      await clock.sleep(retryMs ?? 1000);
    }
  };

  function fill(): void {
    while (active < poolSize && started < s.requests) {
      started++;
      active++;
      void request().then(() => {
        active--;
        finished++;
        res.durationMs = clock.now - start;
        fill();
      });
    }
  }
  // The figure's pace and concurrency, once a second.
  const tick = async (): Promise<void> => {
    while (finished < s.requests) {
      await clock.sleep(1000);
      const sec = second(clock.now - 1);
      sec.pace = controller.pace;
      sec.concurrency = controller.concurrency;
    }
  };
  void tick();
  fill();
  await clock.run(() => finished >= s.requests, start + LIMIT_MS);
  res.finished = finished >= s.requests;
  if (!res.finished) res.durationMs = clock.now - start;
  if (s.story === 'raise' || s.story === 'concurrency') res.raisedUsable = usable(s, s.fromMs + 5000, s.fromMs + 10_000);
  return res;
}

// ---- the goals ---------------------------------------------------------------------------------------

export interface Measured {
  seed: number;
  headers: boolean;
  story: Story;
  /** Accepted over what could have been accepted from the start to the last answer (the run without strays). */
  used: number;
  /** Quota refusals over attempts. */
  quota429Share: number;
  /** The run with strays: its attempts and its quota refusals by cause. */
  attempts: number;
  quota429By: Record<Cause, number>;
  /** With strays: T, T₀ (the same scenario without strays), n (their Retry-After total), all ms; and T ≤ 1.5 T₀ + n + 2 s. */
  stray?: { t: number; t0: number; n: number; ok: boolean };
  /** A raise that the run lasted through: the used share over its 5th to 10th second (at most 1: a bucket's stored burst can exceed it). */
  raised?: number;
  /** A concurrency limit that went away after lowering the pool: how long after, ms, the pool was back at the configured concurrency (Infinity: never, within the run). */
  regainedMs?: number;
  /**
   * A concurrency limit that went away, the run lasting through: the used share over the 5th to 10th
   * second after (at most 1). A controller that kept to the limit by its pace rather than its pool
   * must raise that pace again: this measures both.
   */
  afterLimit?: number;
}

export async function measure(seed: number, controller?: ControllerFactory): Promise<Measured> {
  const s = scenarioOf(seed);
  const opts = controller ? { controller } : {};
  // The quota's use is judged without the strays (their cost is the stray bound's to judge), the
  // 429s and the concurrency with them.
  const r0 = await runScenario(s, { ...opts, strays: false });
  const r = s.strays > 0 ? await runScenario(s, opts) : r0;
  const m: Measured = {
    seed, headers: s.headers !== undefined, story: s.story,
    used: r0.accepted / Math.max(1, usable(s, 0, r0.durationMs)),
    quota429Share: r.quota429 / Math.max(1, r.attempts),
    attempts: r.attempts, quota429By: r.quota429By,
  };
  if (s.strays > 0) {
    m.stray = { t: r.durationMs, t0: r0.durationMs, n: r.strayRetryMs, ok: r.finished && r.durationMs <= 1.5 * r0.durationMs + r.strayRetryMs + 2000 };
  }
  if (s.story === 'raise' && r0.durationMs >= s.fromMs + 10_000) m.raised = Math.min(1, r0.raisedAccepted / Math.max(1, r0.raisedUsable));
  if (s.story === 'concurrency' && r0.durationMs >= s.fromMs + 10_000) m.afterLimit = Math.min(1, r0.raisedAccepted / Math.max(1, r0.raisedUsable));
  if (s.story === 'concurrency' && r.lowered) m.regainedMs = r.restoredAtMs === undefined ? Infinity : r.restoredAtMs - s.fromMs;
  return m;
}

export function quantile(xs: number[], q: number): number {
  if (!xs.length) return NaN;
  const a = [...xs].sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.max(0, Math.floor(q * (a.length - 1))))]!;
}

export interface GoalRow {
  goal: string;
  half: 'headers' | 'no headers';
  scenarios: number;
  figure: string;
  met: boolean;
  /** The worst seeds, worst first, with their value. */
  worst: Array<{ seed: number; value: number }>;
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

/** The goals of issue 41 over each half of the family. */
export function judge(all: Measured[]): GoalRow[] {
  const rows: GoalRow[] = [];
  for (const half of ['headers', 'no headers'] as const) {
    const ms = all.filter((m) => m.headers === (half === 'headers'));
    const worst = (xs: Measured[], v: (m: Measured) => number, low = true) =>
      [...xs].sort((a, b) => (low ? v(a) - v(b) : v(b) - v(a))).slice(0, 5).map((m) => ({ seed: m.seed, value: v(m) }));
    const used = ms.map((m) => m.used);
    rows.push({
      goal: 'used quota (median ≥ 90 %, p10 ≥ 80 %)', half, scenarios: ms.length,
      figure: `median ${pct(quantile(used, 0.5))}, p10 ${pct(quantile(used, 0.1))}`,
      met: quantile(used, 0.5) >= 0.9 && quantile(used, 0.1) >= 0.8, worst: worst(ms, (m) => m.used),
    });
    const share = ms.map((m) => m.quota429Share);
    const within5 = share.filter((x) => x <= 0.05).length / Math.max(1, share.length);
    const within10 = share.filter((x) => x <= 0.1).length / Math.max(1, share.length);
    rows.push({
      goal: 'quota 429s (≤ 5 % in ≥ 90 %, ≤ 10 % in ≥ 99 % of scenarios)', half, scenarios: ms.length,
      figure: `≤ 5 % in ${pct(within5)}, ≤ 10 % in ${pct(within10)}; median ${pct(quantile(share, 0.5))}, p90 ${pct(quantile(share, 0.9))}`,
      met: within5 >= 0.9 && within10 >= 0.99, worst: worst(ms, (m) => m.quota429Share, false),
    });
    const strays = ms.filter((m) => m.stray);
    const over = (m: Measured) => (m.stray!.t - m.stray!.n - 2000) / Math.max(1, m.stray!.t0);
    rows.push({
      goal: 'strays cost their pauses (T ≤ 1.5 T₀ + n + 2 s, every scenario)', half, scenarios: strays.length,
      figure: `held in ${strays.filter((m) => m.stray!.ok).length} of ${strays.length}; (T − n − 2 s) / T₀ median ${quantile(strays.map(over), 0.5).toFixed(2)}, worst ${Math.max(0, ...strays.map(over)).toFixed(2)}`,
      met: strays.every((m) => m.stray!.ok), worst: worst(strays, over, false),
    });
    const raised = ms.filter((m) => m.raised !== undefined);
    const rv = raised.map((m) => m.raised!);
    rows.push({
      goal: 'raised quota in use 5–10 s after (median ≥ 85 %)', half, scenarios: raised.length,
      figure: `median ${pct(quantile(rv, 0.5))}, p10 ${pct(quantile(rv, 0.1))}`,
      met: !raised.length || quantile(rv, 0.5) >= 0.85, worst: worst(raised, (m) => m.raised!),
    });
    const conc = ms.filter((m) => m.regainedMs !== undefined);
    const delays = conc.map((m) => m.regainedMs! / 1000);
    const after = ms.filter((m) => m.afterLimit !== undefined);
    const av = after.map((m) => m.afterLimit!);
    rows.push({
      goal: 'concurrency raised again once the limit is gone (every lowered pool back; median ≥ 85 % in use 5–10 s after)', half, scenarios: after.length,
      figure: `pool lowered in ${conc.length}, raised again in ${conc.filter((m) => m.regainedMs! < Infinity).length}, within 30 s in ${delays.filter((d) => d <= 30).length} (delay median ${quantile(delays, 0.5).toFixed(1)} s); in use 5–10 s after: median ${pct(quantile(av, 0.5))}, p10 ${pct(quantile(av, 0.1))}`,
      met: conc.every((m) => m.regainedMs! < Infinity) && (!after.length || quantile(av, 0.5) >= 0.85), worst: worst(after, (m) => m.afterLimit!),
    });
  }
  return rows;
}

/** Seeds [first, first + n) measured one after another. */
export async function measureFamily(n: number, first = 1, controller?: ControllerFactory): Promise<Measured[]> {
  const out: Measured[] = [];
  for (let seed = first; seed < first + n; seed++) out.push(await measure(seed, controller));
  return out;
}

/** The rows as a Markdown table. */
export function renderGoals(rows: GoalRow[]): string {
  const lines = ['| goal | servers | scenarios | figure | worst seeds | met |', '|---|---|---:|---|---|---|'];
  for (const r of rows) {
    const value = (v: number) => (r.goal.startsWith('strays') ? v.toFixed(2) : pct(v));
    const worst = r.worst.map((w) => `${w.seed} (${value(w.value)})`).join(', ');
    lines.push(`| ${r.goal} | ${r.half} | ${r.scenarios} | ${r.figure} | ${worst} | ${r.met ? 'yes' : '**no**'} |`);
  }
  return lines.join('\n');
}

/**
 * The quota's 429s by cause (`Cause`) in each scenario over `over` of its attempts, then the totals
 * over those and over the whole half: where the 429 share is lost.
 */
export function renderCauses(all: Measured[], over = 0.05): string {
  const lines = ['| servers | seed | story | quota | attempts | quota 429s | learning | probe | lowered | steady |', '|---|---:|---|---|---:|---:|---:|---:|---:|---:|'];
  const total = (ms: Measured[]) => {
    const t: Record<Cause, number> = { learning: 0, probe: 0, lowered: 0, steady: 0 };
    for (const m of ms) for (const c of CAUSES) t[c] += m.quota429By[c];
    return t;
  };
  const row = (half: string, seed: string, story: string, quota: string, ms: Measured[]) => {
    const t = total(ms);
    const n = CAUSES.reduce((x, c) => x + t[c], 0);
    const attempts = ms.reduce((x, m) => x + m.attempts, 0);
    const cell = (c: Cause) => `${t[c]}${ms.length > 1 && n ? ` (${Math.round((100 * t[c]) / n)} %)` : ''}`;
    lines.push(`| ${half} | ${seed} | ${story} | ${quota} | ${attempts} | ${n} (${pct(n / Math.max(1, attempts))}) | ${CAUSES.map(cell).join(' | ')} |`);
  };
  for (const half of ['headers', 'no headers'] as const) {
    const ms = all.filter((m) => m.headers === (half === 'headers'));
    const failing = ms.filter((m) => m.quota429Share > over).sort((x, y) => y.quota429Share - x.quota429Share);
    for (const m of failing) {
      const s = scenarioOf(m.seed);
      row(half, String(m.seed), s.story, `${s.kind} ${s.limit}/${s.windowMs / 1000} s`, [m]);
    }
    row(half, `all ${failing.length} over ${pct(over)}`, '', '', failing);
    row(half, `all ${ms.length}`, '', '', ms);
  }
  return lines.join('\n');
}

// ---- the figure (docs/design.md) ---------------------------------------------------------------------

/** The seed drawn in docs/rate-pace.svg: a sliding window of 12 a second that drops to 6 for 13 s, no headers, no strays. */
export const FIGURE_SEED = 57;

/**
 * An SVG of one run, second by second: the quota usable (grey steps), the answers accepted (blue),
 * the controller's pace (orange, dashed; absent while unpaced) and the quota's 429s (red ticks).
 */
export async function paceFigure(seed = FIGURE_SEED, controller?: ControllerFactory): Promise<string> {
  const s = scenarioOf(seed);
  const r = await runScenario(s, { strays: false, ...(controller ? { controller } : {}) });
  const secs = r.seconds.slice(0, Math.ceil(r.durationMs / 1000));
  const W = 720;
  const H = 300;
  const L = 48;
  const B = 36;
  const top = Math.ceil(Math.max(...secs.map((x) => Math.max(x.usable, x.accepted, Math.min(x.pace ?? 0, 2 * x.usable)))) / 4) * 4;
  const X = (t: number) => L + ((W - L - 12) * t) / secs.length;
  const Y = (v: number) => H - B - ((H - B - 12) * Math.min(v, top)) / top;
  const steps = (v: (x: Second) => number) => secs.map((x) => `${X(x.t).toFixed(1)},${Y(v(x)).toFixed(1)} ${X(x.t + 1).toFixed(1)},${Y(v(x)).toFixed(1)}`).join(' ');
  const pace: string[] = [];
  for (const x of secs) if (x.pace !== undefined) pace.push(`${X(x.t + 1).toFixed(1)},${Y(x.pace).toFixed(1)}`);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
  ];
  for (let v = 0; v <= top; v += top / 4) out.push(`<line x1="${L}" x2="${W - 12}" y1="${Y(v)}" y2="${Y(v)}" stroke="#eee"/><text x="${L - 6}" y="${Y(v) + 4}" text-anchor="end">${v}</text>`);
  for (let t = 0; t <= secs.length; t += 10) out.push(`<text x="${X(t)}" y="${H - B + 14}" text-anchor="middle">${t} s</text>`);
  out.push(`<polyline points="${steps((x) => x.usable)}" fill="none" stroke="#999" stroke-width="3"/>`);
  out.push(`<polyline points="${steps((x) => x.accepted)}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>`);
  if (pace.length) out.push(`<polyline points="${pace.join(' ')}" fill="none" stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="5,3"/>`);
  for (const x of secs) for (let i = 0; i < x.refused; i++) out.push(`<line x1="${X(x.t + 0.5)}" x2="${X(x.t + 0.5)}" y1="${Y(0) - 2 - 6 * i}" y2="${Y(0) - 6 - 6 * i}" stroke="#d62728" stroke-width="2"/>`);
  out.push(
    `<text x="${L}" y="${H - 6}">requests a second · grey: the quota · blue: accepted · orange dashed: the pace · red: the quota's 429s</text>`,
    `<text x="${W - 12}" y="14" text-anchor="end">seed ${seed}: ${s.kind} window, ${s.limit} per ${s.windowMs / 1000} s, ${s.maxConcurrency} workers</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}
