/**
 * The reporting client: graphql-request over the typed transport, with retries. The `sessions` hot
 * path posts the query itself and hands the bytes to sessions-body.ts: graphql-request would make a
 * string and an object per record, costing more than the rest of the pipeline (docs/benchmarks.md).
 *
 * Transient errors are retried with full-jitter backoff up to `maxAttempts`; 429 waits for Retry-After
 * (or the backoff) up to `maxRateLimitWaits` times; everything else fails at once. Every attempt,
 * retry and 429 is counted here and nowhere else (`counts`, shared with a run's tally), at the line
 * that logs it, so the summary, `_runs` and the metrics say what the log says.
 */
import { ClientError, GraphQLClient } from 'graphql-request';
import { silentLogger, type Logger } from '../util/logger.js';
import { clipText } from '../util/clip-text.js';
import { redact, registerSecret } from '../util/redact.js';
import { realSleep, type Sleep } from '../util/sleep.js';
import { oneLine } from '../util/terminal-text.js';
import { GraphQLResponseError, type GraphQLErrorEntry } from './errors/graphql-response-error.js';
import { InvalidResponseError } from './errors/invalid-response-error.js';
import { RateLimitedError } from './errors/rate-limited-error.js';
import { ReportingError } from './errors/reporting-error.js';
import { TransientError } from './errors/transient-error.js';
import { sessionQuery, sessionsQuery } from './query.js';
import { validateRecord } from './record-schema.js';
import { backoffDelay } from './retry-timing.js';
import type { SessionRecord } from '../schema/session-fields.js';
import { readSessionsBody, type SessionsBody } from './sessions-body.js';
import { createBytesTransport, createTransport, type BytesResponse, type FetchLike, type TransportOptions } from './transport.js';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_TIMEOUT_MS, retryOptions, type RetryOptions } from './defaults.js';

export { DEFAULT_RETRY, type RetryOptions } from './defaults.js';

export interface AttemptHooks {
  /**
   * Awaited before every attempt (the pipeline's shared pause after a 429). What it returns is released
   * once the attempt ended, however, before any wait for a retry: the rate controller's count in flight.
   */
  beforeAttempt?(signal?: AbortSignal): Promise<{ release(): void } | void>;
  /** A 429 came back (`retryAfterIsDate`: its Retry-After was an HTTP date). */
  onRateLimited?(retryAfterMs: number | undefined, retryAfterIsDate?: boolean): void;
  /** A retry is about to wait `delayMs` (counted and logged by the client already). */
  onRetry?(info: { attempt: number; error: ReportingError; delayMs: number }): void;
  onSuccess?(): void;
  /** The headers of every answer (called before onSuccess or onRateLimited): rate-limit headers live here. */
  onResponseHeaders?(headers: Headers): void;
}

export interface ReportingClientOptions extends Partial<RetryOptions>, Pick<Partial<TransportOptions>, 'keySource' | 'urlSource'> {
  /** The endpoint (REPORTING_URL). */
  url: string;
  /** The reporting API key, sent as the whole Authorization header (REPORTING_API_KEY). */
  apiKey: string;
  /** Per-request timeout in ms, body included. Default 60 000. */
  timeoutMs?: number;
  /** Largest answer body read, bytes (BodyTooLargeError beyond). Default 256 MiB. */
  maxBodyBytes?: number;
  fetch?: FetchLike;
  now?: () => number;
  sleep?: Sleep;
  random?: () => number;
  logger?: Logger;
  hooks?: AttemptHooks;
  /** A run passes its tally's; default a fresh one, `client.counts`. */
  counts?: RequestCounts;
}

/** `retries`: one per "retrying a request" log line (429s included). */
export interface RequestCounts {
  requests: number;
  retries: number;
  rateLimited: number;
}

export interface FetchResult<T> {
  value: T;
  attempts: number;
  rateLimited: number;
}

/** graphql-request's checks of an answer throw plain Errors told apart only by their text: these run first, typed. */
function graphqlAnswersOnly(transport: FetchLike): FetchLike {
  return async (input, init) => {
    const res = await transport(input, init);
    const type = res.headers.get('content-type') ?? '';
    if (!/json|graphql/i.test(type)) {
      throw new InvalidResponseError(`the reporting endpoint answered with a body that is not a GraphQL response (content-type ${JSON.stringify(type.slice(0, 100))})`);
    }
    return res;
  };
}

/** JSON.parse (a SyntaxError stays one), then the shape of a GraphQL response. */
const GRAPHQL_JSON = {
  stringify: JSON.stringify,
  parse(text: string): unknown {
    const v = JSON.parse(text) as unknown;
    const what =
      typeof v !== 'object' || v === null || Array.isArray(v)
        ? 'not an object'
        : 'errors' in v && !Array.isArray(v.errors)
          ? 'errors is not a list'
          : 'data' in v && v.data !== null && (typeof v.data !== 'object' || Array.isArray(v.data))
            ? 'data is not an object'
            : undefined;
    if (what) throw new InvalidResponseError(`the reporting endpoint answered with a body that is not a GraphQL response (${what})`);
    return v;
  },
};

export class ReportingClient {
  private readonly gql: GraphQLClient;
  private readonly retry: RetryOptions;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly logger: Logger;
  private readonly hooks: AttemptHooks;
  private readonly post: (query: string, signal?: AbortSignal) => Promise<BytesResponse>;
  readonly url: string;
  readonly counts: RequestCounts;

  constructor(opts: ReportingClientOptions) {
    if (!opts.url) throw new TypeError('reporting URL is required (REPORTING_URL)');
    if (!opts.apiKey) throw new TypeError('reporting API key is required (REPORTING_API_KEY)');
    registerSecret(opts.apiKey);
    this.url = opts.url;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? realSleep;
    this.random = opts.random ?? Math.random;
    this.logger = opts.logger ?? silentLogger;
    this.hooks = opts.hooks ?? {};
    this.counts = opts.counts ?? { requests: 0, retries: 0, rateLimited: 0 };
    this.retry = retryOptions(opts);
    const transportOptions: TransportOptions = {
      fetch: opts.fetch ?? globalThis.fetch,
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      now: this.now,
      ...(opts.keySource ? { keySource: opts.keySource } : {}),
      ...(opts.urlSource ? { urlSource: opts.urlSource } : {}),
      contact: { answered: false },
      onHeaders: (h) => this.hooks.onResponseHeaders?.(h),
    };
    const apiKey = opts.apiKey;
    // The key lives only in these closures' header factories: it is not a property of the client.
    this.gql = new GraphQLClient(opts.url, {
      fetch: graphqlAnswersOnly(createTransport(transportOptions)),
      jsonSerializer: GRAPHQL_JSON,
      headers: () => ({ Authorization: apiKey, 'Content-Type': 'application/json' }),
      errorPolicy: 'none',
    });
    const bytes = createBytesTransport(transportOptions);
    this.post = (query, signal) =>
      bytes(this.url, {
        method: 'POST',
        headers: { Authorization: apiKey, 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ query }),
        ...(signal ? { signal } : {}),
      });
  }

  /** Sessions for `[start, end]` (epoch seconds) as the body scanner read them (sessions-body.ts). */
  async fetchSessionsBody(start: number, end: number, signal?: AbortSignal): Promise<FetchResult<SessionsBody>> {
    const query = sessionsQuery(start, end);
    return this.withRetry(async () => {
      const res = await this.post(query, signal);
      return readSessionsBody(res.body, `window ${start}..${end}`);
    }, signal);
  }

  /** fetchSessionsBody's records as objects, every one validated (RecordValidationError on the first bad one). */
  async fetchSessions(start: number, end: number, signal?: AbortSignal): Promise<FetchResult<SessionRecord[]>> {
    const r = await this.fetchSessionsBody(start, end, signal);
    const body = r.value;
    const raws: unknown[] =
      body.kind === 'records' ? body.records : body.count === 0 ? [] : body.ndjson.toString('utf8').split('\n').map((line) => JSON.parse(line) as unknown);
    return { ...r, value: raws.map((raw, i) => validateRecord(raw, i)) };
  }

  /** One session by id (UUID), or null when the server has none. */
  async getSession(id: string, signal?: AbortSignal): Promise<SessionRecord | null> {
    const query = sessionQuery(id);
    const r = await this.withRetry(async () => {
      const data = await this.run(query, signal);
      if (!data || typeof data !== 'object' || !('session' in data)) {
        throw new InvalidResponseError('the reporting endpoint answered without data.session');
      }
      return (data as { session: unknown }).session;
    }, signal);
    return r.value == null ? null : validateRecord(r.value, 0);
  }

  /** Runs `query` through graphql-request, mapping what it throws onto the error family. */
  private async run(query: string, signal?: AbortSignal): Promise<unknown> {
    try {
      return (await this.gql.rawRequest<unknown>({ query, ...(signal ? { signal } : {}) })).data;
    } catch (err) {
      if (err instanceof ClientError) {
        const { errors, data } = err.response;
        throw new GraphQLResponseError((errors ?? []) as unknown as GraphQLErrorEntry[], data ?? null);
      }
      throw err instanceof SyntaxError ? TransientError.incompleteBody(err) : err;
    }
  }

  private async withRetry<T>(attempt: () => Promise<T>, signal?: AbortSignal): Promise<FetchResult<T>> {
    let attempts = 0;
    let transientFailures = 0;
    let rateLimited = 0;
    const giveUp = (err: ReportingError) => Object.assign(err, { attempts });
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      const slot = await this.hooks.beforeAttempt?.(signal);
      attempts++;
      this.counts.requests++;
      let error: ReportingError;
      let delayMs: number;
      try {
        const value = await attempt();
        this.hooks.onSuccess?.();
        return { value, attempts, rateLimited };
      } catch (err) {
        if (!(err instanceof ReportingError)) throw err;
        if (!err.retryable) throw giveUp(err);
        error = err;
        if (err instanceof RateLimitedError) {
          rateLimited++;
          this.counts.rateLimited++;
          this.hooks.onRateLimited?.(err.retryAfterMs, err.retryAfterIsDate);
          if (rateLimited > this.retry.maxRateLimitWaits) throw giveUp(err);
          if (err.retryAfterMs !== undefined && err.retryAfterMs > this.retry.maxRetryAfterMs) throw giveUp(err);
          delayMs = err.retryAfterMs ?? backoffDelay(rateLimited, this.retry, this.random);
        } else {
          transientFailures++;
          if (transientFailures >= this.retry.maxAttempts) throw giveUp(err);
          delayMs = backoffDelay(transientFailures, this.retry, this.random);
        }
      } finally {
        slot?.release();
      }
      this.counts.retries++;
      // A server's message: one printable line, redacted, clipped.
      this.logger.warn({ attempt: attempts, kind: error.kind, delayMs, message: clipText(oneLine(redact(error.message))) }, 'retrying a request');
      this.hooks.onRetry?.({ attempt: attempts, error, delayMs });
      await this.sleep(delayMs, signal);
    }
  }
}
