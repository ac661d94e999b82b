/**
 * The emulator's HTTP server: routing, authentication, the rate limit and connection-level faults,
 * statistics and the request log. Query handling lives in ReportingEndpoint, data in SessionDataset.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { listen } from '../util/listen.js';
import { Lru } from './lru.js';
import { FAULT_KINDS, FaultDice, RateLimiter, validateFaults, type FaultKind } from './faults.js';
import { DAY_SECONDS } from './generate-day.js';
import { handleInterfaceRequest, type InterfaceContext } from './interface/index.js';
import {
  ARG_TYPES, DEFAULT_EMULATOR_API_KEY, DRAWN_FAULT_KINDS, WINDOW_RULES,
  type Emulator, type EmulatorAccount, type EmulatorAccountStats, type EmulatorAccountView,
  type EmulatorFaults, type EmulatorOptions, type EmulatorStats,
} from './options.js';
import { accountOverrides, accountSeed, checkAccounts, MAX_INSTANT } from './accounts.js';
import { ReportingEndpoint, type Answer, type CachedAnswer } from './reporting-endpoint.js';
import { cutInHalf, MAX_BODY_BYTES, parseRequest, readBody, sendChunks, sendJson, sendServerError, sendTooMany, setRateLimitHeaders } from './http-answers.js';
import { reportingSchema, type ArgTypes } from './schema.js';
import { SessionDataset, SharedDayCache, type WindowRule } from './session-dataset.js';
import { lateDataView } from './late-data.js';

const REPORTING_PATHS = new Set(['/', '/graphql', '/graphql/']);
const INTERFACE_PREFIXES = ['/oauth', '/identity', '/api/'];
const DEFAULT_CACHE_BYTES = 1 << 30;
/** Generated days kept over all accounts (an estimate: text plus parsed objects), about 64 busy days' worth. */
const SHARED_DAY_CACHE_BYTES = 256 << 20;

/** One account (without `accounts` there is one, unnamed): its key, data, faults, dice and counters. */
interface Tenant {
  view: EmulatorAccountView;
  /** The account's own settings, laid over the emulator's faults. */
  overrides: EmulatorFaults;
  faults: EmulatorFaults;
  limiter: RateLimiter | undefined;
  /** Reporting requests of this account not yet answered (the concurrency limit counts these). */
  inFlight: number;
  /** Reporting requests of this account since its faults were set (late data is released by them). */
  lateRequests: number;
  endpoint: ReportingEndpoint;
  stats: EmulatorAccountStats;
  /** Seeded by the account's seed: its fault sequence does not depend on the other accounts' requests. */
  dice: FaultDice;
  countFault: (kind: FaultKind) => void;
}

/** Starts the emulator on loopback (port 0 unless told) and resolves once it listens. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const { seed = 1, windowRule = 'closed', argTypes = 'Int!', sessionsPerDay = 200 } = options;
  const multi = options.accounts !== undefined;
  if (multi && options.apiKey !== undefined) throw new RangeError('apiKey and accounts cannot be combined: give each account its own apiKey');
  const apiKey = options.apiKey ?? DEFAULT_EMULATOR_API_KEY;
  checkOptions(options, seed, windowRule, argTypes, sessionsPerDay, apiKey);
  if (multi) checkAccounts(options.accounts);

  let pinnedNow = options.now === undefined ? undefined : Math.floor(options.now);
  const clock = (): number => pinnedNow ?? Math.floor(Date.now() / 1_000);
  const from = options.from ?? Math.floor((clock() - 90 * DAY_SECONDS) / DAY_SECONDS) * DAY_SECONDS;
  if (options.to !== undefined && options.to <= from) throw new RangeError(`to (${options.to}) must lie after from (${from})`);
  const longNotes = options.longNotes === true ? {} : options.longNotes || undefined;
  const lone = longNotes?.loneSurrogateRate;
  if (lone !== undefined && !(lone >= 0 && lone <= 1)) throw new RangeError(`longNotes.loneSurrogateRate must lie in [0, 1]; got ${lone}`);

  let baseFaults: EmulatorFaults = { ...options.faults };
  validateFaults(baseFaults);
  const bodyCache = options.cacheBodies
    ? new Lru<string, CachedAnswer>(typeof options.cacheBodies === 'object' ? options.cacheBodies.maxBytes : DEFAULT_CACHE_BYTES, (a) => a.bytes)
    : undefined;
  let stats = emptyStats(0);
  const schema = reportingSchema(argTypes);
  const sharedDays = multi ? new SharedDayCache(SHARED_DAY_CACHE_BYTES) : undefined;

  const makeTenant = (a: EmulatorAccount | undefined): Tenant => {
    const tenantSeed = a ? a.seed ?? accountSeed(seed, a.name) : seed;
    const tenantFrom = a?.from ?? from;
    const tenantTo = a ? a.to ?? options.to : options.to;
    if (tenantTo !== undefined && tenantTo <= tenantFrom) throw new RangeError(`accounts (${a?.name}): to (${tenantTo}) must lie after from (${tenantFrom})`);
    const overrides = a ? accountOverrides(a) : {};
    const faults = mergedFaults(baseFaults, overrides, a?.name);
    const store = new SessionDataset({
      seed: tenantSeed, sessionsPerDay: a?.sessionsPerDay ?? sessionsPerDay, from: tenantFrom, to: tenantTo, now: clock, longNotes,
      lateData: () => lateDataView(tenant.faults.holdBack, tenant.faults.amend, clock(), tenant.lateRequests),
      ...(a ? { idSeed: seed, scope: a.name, dayCache: sharedDays } : {}),
    });
    const dice = new FaultDice(tenantSeed);
    const countFault = (kind: FaultKind): void => {
      stats.faults[kind] = (stats.faults[kind] ?? 0) + 1;
      if (a) tenant.stats.faults[kind] = (tenant.stats.faults[kind] ?? 0) + 1;
    };
    const endpoint = new ReportingEndpoint({
      schema, store, windowRule, faults: () => tenant.faults, dice, countFault, bodyCache, cachePrefix: a && `${a.name}\u0000`,
    });
    const view: EmulatorAccountView = {
      name: a?.name as string, apiKey: a ? a.apiKey : apiKey, revoked: a?.revoked ?? false, seed: tenantSeed,
      dataset: { sessionsStartedIn: (start, end) => store.sessionsStartedIn(start, end), byId: (id) => store.byId(id) },
    };
    const tenant: Tenant = {
      view, overrides, faults, limiter: limiterOf(faults),
      inFlight: 0, lateRequests: 0, stats: emptyStats(),
      endpoint, dice, countFault,
    };
    return tenant;
  };
  const tenants = multi ? (options.accounts as EmulatorAccount[]).map(makeTenant) : [makeTenant(undefined)];
  const byKey = new Map(tenants.map((t) => [t.view.apiKey, t]));
  const first = tenants[0] as Tenant;
  const interfaceContext: InterfaceContext = { now: clock, options: options.interface };
  const log = options.log;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const began = performance.now();
    const path = (req.url ?? '/').split('?', 1)[0] as string;
    let outcome = '';
    const authorization = req.headers.authorization;
    // Whose request this is, for its latency, in-flight count and statistics (before the key is judged).
    const owner = multi ? (authorization === undefined ? undefined : byKey.get(authorization)) : first;
    stats.requests++;
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    const ownStats = multi ? owner?.stats : undefined;
    if (ownStats) ownStats.requests++;
    res.on('close', () => {
      stats.inFlight--;
      if (res.writableFinished) {
        for (const s of ownStats ? [stats, ownStats] : [stats]) s.byStatus[res.statusCode] = (s.byStatus[res.statusCode] ?? 0) + 1;
      }
      const who = multi ? ` account=${owner?.view.name ?? '-'}` : '';
      log?.(`${req.method} ${path} ${res.writableFinished ? res.statusCode : 'reset'} ${Math.round(performance.now() - began)}ms${who}${outcome}`);
    });

    if (INTERFACE_PREFIXES.some((p) => path.startsWith(p))) {
      const handled = await handleInterfaceRequest(req, res, interfaceContext);
      if (!handled && !res.headersSent) sendJson(res, 404, { errors: [{ message: `Not found: ${path}` }] });
      return;
    }

    // From arrival to answer, as a server's concurrency limit counts them (the latency included).
    if (owner) {
      owner.inFlight++;
      res.once('close', () => owner.inFlight--);
    }
    const faults = owner?.faults ?? baseFaults;
    const body = await readBody(req);
    if (faults.latencyMs) await sleep(faults.latencyMs);
    if (body === 'too-large') return sendJson(res, 413, { errors: [{ message: `Request body exceeds ${MAX_BODY_BYTES} bytes.` }] });
    if (!REPORTING_PATHS.has(path)) return sendJson(res, 404, { errors: [{ message: `Not found: ${path}` }] });
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return sendJson(res, 405, { errors: [{ message: `Method ${req.method} is not allowed; send the query with POST.` }] });
    }

    const tenant = authorization === undefined ? undefined : byKey.get(authorization);
    if (!tenant || tenant.view.revoked) {
      const message = !authorization
        ? 'Missing API key: send the reporting API key as the whole Authorization header value.'
        : tenant?.view.revoked
          ? 'This API key has been revoked.'
          : /^bearer\s/i.test(authorization)
            ? 'OAuth access tokens are not accepted on the reporting endpoint; send a reporting API key as the whole Authorization header value.'
            : 'Invalid API key.';
      return sendJson(res, 401, { errors: [{ message }] });
    }
    const { limiter, endpoint, dice } = tenant;
    tenant.lateRequests++;
    const inject = (kind: FaultKind, note = ''): void => {
      tenant.countFault(kind);
      outcome += ` fault=${kind}${note}`;
    };

    const nowMs = Date.now();
    if (faults.concurrencyLimit !== undefined && tenant.inFlight > faults.concurrencyLimit) {
      inject('rateLimited', '(concurrency)');
      return sendTooMany(res, 1, nowMs + 1_000, `At most ${faults.concurrencyLimit} requests may be in flight at once; retry after 1 s.`, faults.retryAfterFormat);
    }
    const retryAfter = limiter?.take(nowMs);
    const quota = limiter && (faults.rateLimitHeaders || retryAfter !== undefined) ? limiter.state(nowMs) : undefined;
    if (quota && faults.rateLimitHeaders) setRateLimitHeaders(res, faults.rateLimitHeaders, quota);
    if (retryAfter !== undefined) {
      inject('rateLimited');
      return sendTooMany(res, retryAfter, (quota as { resetAtMs: number }).resetAtMs, `Rate limit of ${faults.rateLimitRps ?? 'the schedule\'s'} requests per second exceeded; retry after ${retryAfter} s.`, faults.retryAfterFormat);
    }
    // One fault drawn among faultKinds (at most one per request), on top of the per-kind rates.
    const drawn = dice.roll(faults.faultRate) ? dice.pick(faults.faultKinds?.length ? faults.faultKinds : DRAWN_FAULT_KINDS) : undefined;
    if (drawn === 'rateLimited') {
      inject('rateLimited', '(stray)');
      return sendTooMany(res, 1, nowMs + 1_000, 'Too many requests; retry after 1 s.', faults.retryAfterFormat);
    }
    if (drawn === 'reset' || dice.roll(faults.resetRate)) {
      inject('reset');
      req.socket.destroy();
      return;
    }
    if (drawn === 'serverError' || dice.roll(faults.serverErrorRate)) {
      inject('serverError');
      return sendServerError(res, dice.pick([500, 502, 503] as const));
    }

    const request = parseRequest(body);
    if (typeof request === 'string') return sendJson(res, 400, { errors: [{ message: request }] });
    let answer: Answer;
    try {
      answer = await endpoint.handle(request);
    } catch (err) {
      outcome = ` error=${(err as Error).message}`;
      return sendJson(res, 500, { errors: [{ message: 'Internal server error' }] });
    }
    outcome = ` records=${answer.records}${answer.fault ? ` fault=${answer.fault}` : ''}`;
    if (drawn === 'truncate' || dice.roll(faults.truncateRate)) {
      inject('truncate');
      return sendChunks(res, 200, cutInHalf(answer.chunks, answer.bytes));
    }
    stats.recordsServed += answer.records;
    if (ownStats) ownStats.recordsServed += answer.records;
    sendChunks(res, 200, answer.chunks);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log?.(`internal error: ${(err as Error)?.message ?? String(err)}`);
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'Internal server error' }] });
      else res.destroy();
    });
  });
  // Idle keep-alive connections live longer than a client's own idle timeout (undici: the server's
  // hint minus 1 s), as real endpoints' do: with Node's 5 s default, a client reusing a connection
  // at the moment the server drops it met "other side closed" and retried, a race of the emulator.
  server.keepAliveTimeout = 65_000;
  server.on('clientError', (_err, socket) => socket.destroy());
  const url = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  const accountViews = multi ? tenants.map((t) => t.view) : [];
  let closing: Promise<void> | undefined;
  return {
    url,
    apiKey: first.view.apiKey,
    accounts: accountViews,
    account(name) {
      const found = accountViews.find((a) => a.name === name);
      if (!found) throw new RangeError(`no account named ${JSON.stringify(name)}${multi ? '' : ' (the emulator was started without accounts)'}`);
      return found;
    },
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      return closing;
    },
    stats() {
      const copy: EmulatorStats = copyStats(stats);
      if (multi) copy.accounts = Object.fromEntries(tenants.map((t) => [t.view.name, copyStats(t.stats)]));
      return copy;
    },
    resetStats() {
      stats = emptyStats(stats.inFlight);
      for (const t of tenants) Object.assign(t.stats, emptyStats());
    },
    setFaults(f) {
      validateFaults(f);
      const merged = tenants.map((t) => mergedFaults(f, t.overrides, t.view.name));
      baseFaults = { ...f };
      tenants.forEach((t, i) => {
        t.faults = merged[i] as EmulatorFaults;
        t.limiter = limiterOf(t.faults);
        t.lateRequests = 0;
      });
      bodyCache?.clear();
    },
    setNow(nowSeconds) {
      if (!Number.isFinite(nowSeconds) || nowSeconds > MAX_INSTANT) throw new RangeError(`now must be epoch seconds before 2038; got ${nowSeconds}`);
      pinnedNow = Math.floor(nowSeconds);
      bodyCache?.clear();
    },
    dataset: first.view.dataset,
  };
}

/** The emulator's faults with an account's own settings on top, checked (naming the account). */
function mergedFaults(base: EmulatorFaults, overrides: EmulatorFaults, name: string | undefined): EmulatorFaults {
  const merged = { ...base, ...overrides };
  if (name === undefined) return merged;
  try {
    validateFaults(merged);
  } catch (err) {
    throw new RangeError(`accounts (${name}): ${(err as Error).message}`, { cause: err });
  }
  return merged;
}

/** The quota of these settings, if any: fixed, scheduled, shared with another client. */
function limiterOf(f: EmulatorFaults): RateLimiter | undefined {
  const rps = f.rateLimitRps ?? f.rateLimitSchedule?.[0]?.rps;
  return rps === undefined ? undefined : new RateLimiter({ rps, schedule: f.rateLimitSchedule, others: f.sharedQuotaSchedule });
}

function checkOptions(o: EmulatorOptions, seed: number, windowRule: string, argTypes: string, sessionsPerDay: number, apiKey: string): void {
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be an integer; got ${seed}`);
  if (!WINDOW_RULES.includes(windowRule as WindowRule)) throw new RangeError(`windowRule must be one of ${WINDOW_RULES.join(', ')}; got ${windowRule}`);
  if (!ARG_TYPES.includes(argTypes as ArgTypes)) throw new RangeError(`argTypes must be one of ${ARG_TYPES.join(', ')}; got ${argTypes}`);
  if (!(Number.isFinite(sessionsPerDay) && sessionsPerDay >= 0)) throw new RangeError(`sessionsPerDay must be a non-negative number; got ${sessionsPerDay}`);
  if (!apiKey) throw new RangeError('apiKey must not be empty');
  for (const k of ['from', 'to', 'now'] as const) {
    const t = o[k];
    if (t !== undefined && !(Number.isFinite(t) && t >= 0 && t <= MAX_INSTANT)) {
      throw new RangeError(`${k} must be epoch seconds between 1970 and 2038 (the Int range); got ${t}`);
    }
  }
}

/** Zeroed figures; with `inFlight` the emulator's (its key order is the one `stats()` prints). */
function emptyStats(): EmulatorAccountStats;
function emptyStats(inFlight: number): EmulatorStats;
function emptyStats(inFlight?: number): EmulatorAccountStats {
  const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0]));
  if (inFlight === undefined) return { requests: 0, byStatus: {}, faults, recordsServed: 0 };
  return { requests: 0, byStatus: {}, faults, inFlight, maxInFlight: inFlight, recordsServed: 0 } as EmulatorStats;
}

function copyStats<S extends EmulatorAccountStats>(s: S): S {
  return { ...s, byStatus: { ...s.byStatus }, faults: { ...s.faults } };
}
