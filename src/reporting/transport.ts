import { describeNetworkError } from '../util/describe-network-error.js';
/**
 * The HTTP layer: adds the per-request timeout, reads the whole body as bytes, and turns every
 * transport outcome into the typed error family. `requestBytes` serves the `sessions` hot path
 * (the body goes to the byte scanner, never through a string); `createTransport` wraps it as the
 * `fetch` under graphql-request, which so only ever sees a complete 2xx body.
 */
import { crashPoint } from '../util/crash-point.js';
import { AuthenticationError } from './errors/authentication-error.js';
import { HttpStatusError } from './errors/http-status-error.js';
import { RateLimitedError } from './errors/rate-limited-error.js';
import { TransientError } from './errors/transient-error.js';
import { parseRetryAfter } from './retry-timing.js';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface TransportOptions {
  fetch: FetchLike;
  timeoutMs: number;
  now: () => number;
}

export interface BytesResponse {
  status: number;
  headers: Headers;
  /** The whole 2xx body. */
  body: Buffer;
}

/** Returns a fetch that throws ReportingError subclasses for every failure and buffers the body. */
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
    try {
      res = await opts.fetch(input, { ...init, signal });
      crashPoint('fetch');
      body = Buffer.from(await res.arrayBuffer());
    } catch (err) {
      if (init?.signal?.aborted) throw init.signal.reason ?? err;
      if (timeout.aborted) {
        throw new TransientError('timeout', `the reporting endpoint did not answer within ${opts.timeoutMs} ms`, undefined, { cause: err });
      }
      throw new TransientError('network', `connection to the reporting endpoint failed: ${describeNetworkError(err)}`, undefined, {
        cause: err,
      });
    }
    const status = res.status;
    if (status === 401 || status === 403) throw new AuthenticationError(status);
    if (status === 429) throw new RateLimitedError(parseRetryAfter(res.headers.get('retry-after'), opts.now()));
    if (status >= 500) {
      throw new TransientError('server-error', `the reporting endpoint answered HTTP ${status}`, status);
    }
    if (status < 200 || status >= 300) throw new HttpStatusError(status, body.toString('utf8'));
    return { status, headers: res.headers, body };
  };
}
