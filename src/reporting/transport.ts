/**
 * The HTTP layer under graphql-request: a `fetch` wrapper that adds the per-request timeout,
 * reads the whole body, and turns every transport outcome into the typed error family, so
 * graphql-request only ever sees a complete 2xx body.
 */
import { crashPoint } from '../util/crash-point.js';
import { AuthenticationError } from './errors/AuthenticationError.js';
import { HttpStatusError } from './errors/HttpStatusError.js';
import { RateLimitedError } from './errors/RateLimitedError.js';
import { TransientError } from './errors/TransientError.js';
import { parseRetryAfter } from './retry-timing.js';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface TransportOptions {
  fetch: FetchLike;
  timeoutMs: number;
  now: () => number;
}

/** Returns a fetch that throws ReportingError subclasses for every failure and buffers the body. */
export function createTransport(opts: TransportOptions): FetchLike {
  return async (input, init) => {
    const timeout = AbortSignal.timeout(opts.timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res: Response;
    let body: string;
    try {
      res = await opts.fetch(input, { ...init, signal });
      crashPoint('fetch');
      body = await res.text();
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
    if (status < 200 || status >= 300) throw new HttpStatusError(status, body);
    return new Response(body, { status, headers: res.headers });
  };
}

function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return err instanceof Error ? err.message : String(err);
}
