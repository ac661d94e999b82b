/**
 * The emulator's HTTP server: routing, authentication, the rate limit and connection-level faults,
 * statistics and the request log. Query handling lives in ReportingEndpoint, data in SessionDataset.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { BodyCache } from './body-cache.js';
import { FAULT_KINDS, FaultDice, RateLimiter, validateFaults, type FaultKind } from './faults.js';
import { DRAWN_FAULT_KINDS } from './options.js';
import { DAY_SECONDS } from './generate-day.js';
import { handleInterfaceRequest, type InterfaceContext } from './interface/index.js';
import {
  DEFAULT_EMULATOR_API_KEY,
  type Emulator, type EmulatorFaults, type EmulatorOptions, type EmulatorStats,
} from './options.js';
import { ReportingEndpoint, type Answer, type ReportingRequest } from './reporting-endpoint.js';
import { reportingSchema, type ArgTypes } from './schema.js';
import { SessionDataset, type WindowRule } from './session-dataset.js';

const REPORTING_PATHS = new Set(['/', '/graphql', '/graphql/']);
const INTERFACE_PREFIXES = ['/oauth', '/identity', '/api/'];
const MAX_BODY_BYTES = 1 << 20;
const DEFAULT_CACHE_BYTES = 1 << 30;
/** graphql-js Int is 32-bit: instants after 2038-01-19 cannot be sent or returned. */
const MAX_INSTANT = 2_147_483_647;
const WINDOW_RULES: readonly WindowRule[] = ['closed', 'half-open', 'overlap'];
const ARG_TYPES: readonly ArgTypes[] = ['Int!', 'Int', 'String!'];
const JSON_TYPE = 'application/json; charset=utf-8';

/** Starts the emulator on loopback (port 0 unless told) and resolves once it listens. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const seed = options.seed ?? 1;
  const apiKey = options.apiKey ?? DEFAULT_EMULATOR_API_KEY;
  const windowRule = options.windowRule ?? 'closed';
  const argTypes = options.argTypes ?? 'Int!';
  const sessionsPerDay = options.sessionsPerDay ?? 200;
  checkOptions(options, { seed, windowRule, argTypes, sessionsPerDay, apiKey });

  let pinnedNow = options.now === undefined ? undefined : Math.floor(options.now);
  const clock = (): number => pinnedNow ?? Math.floor(Date.now() / 1_000);
  const from = options.from ?? Math.floor((clock() - 90 * DAY_SECONDS) / DAY_SECONDS) * DAY_SECONDS;
  if (options.to !== undefined && options.to <= from) throw new RangeError(`to (${options.to}) must lie after from (${from})`);
  const longNotes = options.longNotes === true ? {} : options.longNotes || undefined;
  const lone = longNotes?.loneSurrogateRate;
  if (lone !== undefined && !(lone >= 0 && lone <= 1)) throw new RangeError(`longNotes.loneSurrogateRate must lie in [0, 1]; got ${lone}`);
  const store = new SessionDataset({ seed, sessionsPerDay, from, to: options.to, now: clock, ...(longNotes ? { longNotes } : {}) });

  let faults: EmulatorFaults = { ...options.faults };
  validateFaults(faults);
  let limiter = limiterOf(faults);
  /** Reporting requests past authentication and not yet answered (the concurrency limit counts these). */
  let reportingInFlight = 0;
  const bodyCache = options.cacheBodies
    ? new BodyCache(typeof options.cacheBodies === 'object' ? options.cacheBodies.maxBytes : DEFAULT_CACHE_BYTES)
    : undefined;
  const dice = new FaultDice(seed);
  let stats = emptyStats(0);
  const countFault = (kind: FaultKind): void => {
    stats.faults[kind] = (stats.faults[kind] ?? 0) + 1;
  };
  const endpoint = new ReportingEndpoint({
    schema: reportingSchema(argTypes), store, windowRule, faults: () => faults, dice, countFault, bodyCache,
  });
  const interfaceContext: InterfaceContext = { now: clock, options: options.interface };
  const log = options.log;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const began = performance.now();
    const path = pathnameOf(req.url);
    let outcome = '';
    stats.requests++;
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    res.on('close', () => {
      stats.inFlight--;
      if (res.writableFinished) stats.byStatus[res.statusCode] = (stats.byStatus[res.statusCode] ?? 0) + 1;
      log?.(`${req.method} ${path} ${res.writableFinished ? res.statusCode : 'reset'} ${Math.round(performance.now() - began)}ms${outcome}`);
    });

    if (INTERFACE_PREFIXES.some((p) => path.startsWith(p))) {
      const handled = await handleInterfaceRequest(req, res, interfaceContext);
      if (!handled && !res.headersSent) sendJson(res, 404, { errors: [{ message: `Not found: ${path}` }] });
      return;
    }

    // From arrival to answer, as a server's concurrency limit counts them (the latency included).
    reportingInFlight++;
    res.once('close', () => reportingInFlight--);
    const body = await readBody(req);
    if (faults.latencyMs) await sleep(faults.latencyMs);
    if (body === 'too-large') return sendJson(res, 413, { errors: [{ message: `Request body exceeds ${MAX_BODY_BYTES} bytes.` }] });
    if (!REPORTING_PATHS.has(path)) return sendJson(res, 404, { errors: [{ message: `Not found: ${path}` }] });
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return sendJson(res, 405, { errors: [{ message: `Method ${req.method} is not allowed; send the query with POST.` }] });
    }

    const authorization = req.headers.authorization;
    if (authorization !== apiKey) {
      const message = !authorization
        ? 'Missing API key: send the reporting API key as the whole Authorization header value.'
        : /^bearer\s/i.test(authorization)
          ? 'OAuth access tokens are not accepted on the reporting endpoint; send a reporting API key as the whole Authorization header value.'
          : 'Invalid API key.';
      return sendJson(res, 401, { errors: [{ message }] });
    }

    const nowMs = Date.now();
    if (faults.concurrencyLimit !== undefined && reportingInFlight > faults.concurrencyLimit) {
      countFault('rateLimited');
      outcome = ' fault=rateLimited(concurrency)';
      return sendTooMany(res, 1, nowMs, `At most ${faults.concurrencyLimit} requests may be in flight at once; retry after 1 s.`, faults.retryAfterFormat);
    }
    const retryAfter = limiter?.take(nowMs);
    if (limiter && faults.rateLimitHeaders) setRateLimitHeaders(res, faults.rateLimitHeaders, limiter.state(nowMs), nowMs);
    if (retryAfter !== undefined) {
      countFault('rateLimited');
      outcome = ' fault=rateLimited';
      return sendTooMany(res, retryAfter, nowMs, `Rate limit of ${faults.rateLimitRps ?? 'the schedule\'s'} requests per second exceeded; retry after ${retryAfter} s.`, faults.retryAfterFormat);
    }
    // One fault drawn among faultKinds (at most one per request), on top of the per-kind rates.
    const drawn = dice.roll(faults.faultRate) ? dice.pick(faults.faultKinds?.length ? faults.faultKinds : DRAWN_FAULT_KINDS) : undefined;
    if (drawn === 'rateLimited') {
      countFault('rateLimited');
      outcome = ' fault=rateLimited(stray)';
      return sendTooMany(res, 1, nowMs, 'Too many requests; retry after 1 s.', faults.retryAfterFormat);
    }
    if (drawn === 'reset' || dice.roll(faults.resetRate)) {
      countFault('reset');
      outcome = ' fault=reset';
      req.socket.destroy();
      return;
    }
    if (drawn === 'serverError' || dice.roll(faults.serverErrorRate)) {
      countFault('serverError');
      outcome = ' fault=serverError';
      return sendServerError(res, dice.serverErrorStatus());
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
      countFault('truncate');
      outcome += ' fault=truncate';
      return sendChunks(res, answer.status, answer.contentType, cutInHalf(answer.chunks, answer.bytes));
    }
    stats.recordsServed += answer.records;
    sendChunks(res, answer.status, answer.contentType, answer.chunks);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log?.(`internal error: ${(err as Error)?.message ?? String(err)}`);
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'Internal server error' }] });
      else res.destroy();
    });
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}/`,
    apiKey,
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      return closing;
    },
    stats() {
      return { ...stats, byStatus: { ...stats.byStatus }, faults: { ...stats.faults } };
    },
    resetStats() {
      stats = emptyStats(stats.inFlight);
    },
    setFaults(f) {
      validateFaults(f);
      faults = { ...f };
      limiter = limiterOf(faults);
      bodyCache?.clear();
    },
    setNow(nowSeconds) {
      if (!Number.isFinite(nowSeconds) || nowSeconds > MAX_INSTANT) throw new RangeError(`now must be epoch seconds before 2038; got ${nowSeconds}`);
      pinnedNow = Math.floor(nowSeconds);
      bodyCache?.clear();
    },
    dataset: {
      sessionsStartedIn: (start, end) => store.sessionsStartedIn(start, end),
      byId: (id) => store.byId(id),
    },
  };
}

/** The quota of these settings, if any: fixed, scheduled, shared with another client. */
function limiterOf(f: EmulatorFaults): RateLimiter | undefined {
  const rps = f.rateLimitRps ?? f.rateLimitSchedule?.[0]?.rps;
  if (rps === undefined) return undefined;
  return new RateLimiter({
    rps,
    ...(f.rateLimitSchedule ? { schedule: f.rateLimitSchedule } : {}),
    ...(f.sharedQuotaSchedule ? { others: f.sharedQuotaSchedule } : {}),
  });
}

/** 429 with Retry-After as seconds or as an HTTP date (rounded up to the next whole second). */
function sendTooMany(res: ServerResponse, seconds: number, nowMs: number, message: string, format: 'seconds' | 'http-date' = 'seconds'): void {
  res.setHeader('Retry-After', format === 'http-date' ? new Date(Math.ceil((nowMs + seconds * 1000) / 1000) * 1000).toUTCString() : String(seconds));
  sendJson(res, 429, { errors: [{ message }] });
}

function setRateLimitHeaders(res: ServerResponse, kind: 'ietf' | 'x', st: { limit: number; remaining: number; resetSeconds: number }, nowMs: number): void {
  if (kind === 'ietf') {
    res.setHeader('RateLimit-Limit', String(st.limit));
    res.setHeader('RateLimit-Remaining', String(st.remaining));
    res.setHeader('RateLimit-Reset', String(st.resetSeconds));
  } else {
    res.setHeader('X-RateLimit-Limit', String(st.limit));
    res.setHeader('X-RateLimit-Remaining', String(st.remaining));
    res.setHeader('X-RateLimit-Reset', String(Math.ceil(nowMs / 1000) + st.resetSeconds));
  }
}

function checkOptions(
  o: EmulatorOptions,
  v: { seed: number; windowRule: string; argTypes: string; sessionsPerDay: number; apiKey: string },
): void {
  if (!Number.isSafeInteger(v.seed)) throw new RangeError(`seed must be an integer; got ${v.seed}`);
  if (!WINDOW_RULES.includes(v.windowRule as WindowRule)) throw new RangeError(`windowRule must be one of ${WINDOW_RULES.join(', ')}; got ${v.windowRule}`);
  if (!ARG_TYPES.includes(v.argTypes as ArgTypes)) throw new RangeError(`argTypes must be one of ${ARG_TYPES.join(', ')}; got ${v.argTypes}`);
  if (!(Number.isFinite(v.sessionsPerDay) && v.sessionsPerDay >= 0)) throw new RangeError(`sessionsPerDay must be a non-negative number; got ${v.sessionsPerDay}`);
  if (!v.apiKey) throw new RangeError('apiKey must not be empty');
  for (const k of ['from', 'to', 'now'] as const) {
    const t = o[k];
    if (t !== undefined && !(Number.isFinite(t) && t >= 0 && t <= MAX_INSTANT)) {
      throw new RangeError(`${k} must be epoch seconds between 1970 and 2038 (the Int range); got ${t}`);
    }
  }
}

function emptyStats(inFlight: number): EmulatorStats {
  return {
    requests: 0,
    byStatus: {},
    faults: Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])),
    inFlight,
    maxInFlight: inFlight,
    recordsServed: 0,
  };
}

function pathnameOf(url: string | undefined): string {
  const raw = url ?? '/';
  const q = raw.indexOf('?');
  return q === -1 ? raw : raw.slice(0, q);
}

/** The whole body, or 'too-large' (the rest is read and dropped so the connection stays usable). */
async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size > MAX_BODY_BYTES ? 'too-large' : Buffer.concat(chunks);
}

/** The request body as {query, variables?, operationName?}, or the message of a 400 answer. */
function parseRequest(body: Buffer): ReportingRequest | string {
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return 'The request body is not valid JSON.';
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload)) return 'The request body must be a JSON object.';
  const { query, variables, operationName } = payload as Record<string, unknown>;
  if (typeof query !== 'string') return 'Must provide query string.';
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) {
    return 'Variables must be an object.';
  }
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    return 'operationName must be a string.';
  }
  return { query, variables: variables as Record<string, unknown> | null | undefined, operationName: operationName as string | null | undefined };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const buf = Buffer.from(JSON.stringify(body), 'utf8');
  sendChunks(res, status, JSON_TYPE, [buf]);
}

function sendChunks(res: ServerResponse, status: number, contentType: string, chunks: Buffer[]): void {
  let length = 0;
  for (const c of chunks) length += c.length;
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': length });
  res.cork();
  for (const c of chunks) res.write(c);
  res.end();
}

/** 500 in the endpoint's own JSON; 502 and 503 as the plain pages a proxy in front would send. */
function sendServerError(res: ServerResponse, status: 500 | 502 | 503): void {
  if (status === 500) return sendJson(res, 500, { errors: [{ message: 'Internal server error' }] });
  const text = status === 502 ? '502 Bad Gateway\n' : '503 Service Temporarily Unavailable\n';
  sendChunks(res, status, 'text/plain; charset=utf-8', [Buffer.from(text)]);
}

/** The first half of the body's bytes (never valid JSON: the brackets are left open). */
function cutInHalf(chunks: Buffer[], bytes: number): Buffer[] {
  let remaining = Math.floor(bytes / 2);
  const out: Buffer[] = [];
  for (const c of chunks) {
    if (remaining <= 0) break;
    out.push(c.length <= remaining ? c : c.subarray(0, remaining));
    remaining -= c.length;
  }
  return out;
}
