import { describeNetworkError } from '../util/describe-network-error.js';
import { displayUrl, isRedirect } from '../util/display-url.js';
/**
 * The HTTP layer: the per-request timeout, the whole body as bytes, every outcome turned into the
 * typed error family. `createTransport` wraps it as graphql-request's `fetch`, which so only ever
 * sees a complete 2xx body.
 */
import { crashPoint } from '../util/crash-point.js';
import { AuthenticationError } from './errors/authentication-error.js';
import { BodyTooLargeError } from './errors/body-too-large-error.js';
import { EndpointUnreachableError } from './errors/endpoint-unreachable-error.js';
import { HttpStatusError } from './errors/http-status-error.js';
import { RateLimitedError } from './errors/rate-limited-error.js';
import { RedirectError } from './errors/redirect-error.js';
import { TransientError } from './errors/transient-error.js';
import { parseRetryAfter, retryAfterIsDate } from './retry-timing.js';
import { memoryTraceOn, traced } from '../util/memory-trace.js';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface TransportOptions {
  fetch: FetchLike;
  timeoutMs: number;
  now: () => number;
  maxBodyBytes: number;
  /** Sees the headers of every answer, before it is turned into a value or an error (rate-limit headers). */
  onHeaders?: (headers: Headers) => void;
  /** Where the key came from, named by the advice when the endpoint refuses it (AuthenticationError). */
  keySource?: string;
  /** Where the URL is set, named by the advice when the first connection is refused (EndpointUnreachableError). */
  urlSource?: string;
  /**
   * Shared by a client's transports: until the endpoint has answered anything, a refused connection is
   * a wrong address (EndpointUnreachableError); after, a restart (TransientError). Absent: always transient.
   */
  contact?: { answered: boolean };
}

export interface BytesResponse {
  status: number;
  headers: Headers;
  body: Buffer;
}

/** A fetch that throws ReportingError subclasses for every failure and buffers the body. */
export function createTransport(opts: TransportOptions): FetchLike {
  const request = createBytesTransport(opts);
  return async (input, init) => {
    const res = await request(input, init);
    return new Response(res.body, { status: res.status, headers: res.headers });
  };
}

/** Like createTransport, but hands back the body as bytes. */
export function createBytesTransport(opts: TransportOptions): (input: string | URL | Request, init?: RequestInit) => Promise<BytesResponse> {
  return async (input, init) => {
    const timeout = AbortSignal.timeout(opts.timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res: Response;
    let body: Buffer;
    const trace = memoryTraceOn ? { bytes: 0 } : undefined;
    if (trace) traced.requests++;
    try {
      // Never follow a redirect: the Authorization header and the query would go to wherever the
      // server points, and the answer from there would be taken for the endpoint's (see RedirectError).
      res = await opts.fetch(input, { ...init, signal, redirect: 'manual' });
      if (opts.contact) opts.contact.answered = true;
      crashPoint('fetch');
      body = await readBody(res, opts.maxBodyBytes, trace);
    } catch (err) {
      if (err instanceof BodyTooLargeError) throw err;
      if (init?.signal?.aborted) throw init.signal.reason ?? err;
      if (timeout.aborted) {
        throw new TransientError('timeout', `the reporting endpoint did not answer within ${opts.timeoutMs} ms`, undefined, { cause: err });
      }
      const url = urlOf(input);
      const refused = refusal(err);
      if (refused === 'blocked-port' || (refused === 'refused' && opts.contact && !opts.contact.answered)) {
        throw new EndpointUnreachableError(url, describeNetworkError(err, url), opts.urlSource, { cause: err });
      }
      throw new TransientError('network', `connection to the reporting endpoint ${displayUrl(url)} failed: ${describeNetworkError(err, url)}`, undefined, { cause: err });
    } finally {
      if (trace) {
        traced.requests--;
        traced.requestBytes -= trace.bytes;
      }
    }
    const status = res.status;
    opts.onHeaders?.(res.headers);
    if (status === 401 || status === 403) throw new AuthenticationError(status, opts.keySource);
    if (isRedirect(status)) throw new RedirectError(status, res.headers.get('location') ?? undefined, urlOf(input));
    if (status === 429) {
      const retryAfter = res.headers.get('retry-after');
      throw new RateLimitedError(parseRetryAfter(retryAfter, opts.now()), retryAfterIsDate(retryAfter));
    }
    if (status >= 500) throw new TransientError('server-error', `the reporting endpoint answered HTTP ${status}`, status);
    if (status < 200 || status >= 300) throw new HttpStatusError(status, body.toString('utf8'));
    return { status, headers: res.headers, body };
  };
}

/** The whole body, refused beyond `limit` bytes (by Content-Length, else as it streams): a huge body never sits in memory. */
async function readBody(res: Response, limit: number, trace?: { bytes: number }): Promise<Buffer> {
  const declared = res.headers.get('content-length');
  const length = declared === null ? NaN : Number(declared);
  if (Number.isSafeInteger(length) && length > limit) {
    await res.body?.cancel().catch(() => {});
    throw new BodyTooLargeError(limit, length);
  }
  if (!res.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLargeError(limit);
    }
    chunks.push(value);
    if (trace) {
      trace.bytes += value.byteLength;
      traced.requestBytes += value.byteLength;
    }
  }
  return Buffer.concat(chunks, total);
}

/** A refused connection (ECONNREFUSED on every address) or a "bad port" (Fetch standard), from undici's cause, never the message. */
function refusal(err: unknown): 'refused' | 'blocked-port' | undefined {
  const cause = (err as { cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> } } | null)?.cause;
  if (!cause || typeof cause !== 'object') return undefined;
  if (cause.message === 'bad port') return 'blocked-port';
  const codes = cause.errors?.length ? cause.errors.map((e) => e.code) : [cause.code];
  return codes.every((c) => c === 'ECONNREFUSED') ? 'refused' : undefined;
}

function urlOf(input: string | URL | Request): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}
