/** The emulator's HTTP answers: reading and checking a request, and the JSON, 429 and fault replies. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ReportingRequest } from './reporting-endpoint.js';

export const MAX_BODY_BYTES = 1 << 20;
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * 429 with Retry-After as whole seconds, or as an HTTP date: the moment a retry is accepted
 * (`retryAtMs`) rounded up to the whole second once (rounding the seconds first made it up to 2 s late).
 */
export function sendTooMany(res: ServerResponse, seconds: number, retryAtMs: number, message: string, format: 'seconds' | 'http-date' = 'seconds'): void {
  res.setHeader('Retry-After', format === 'http-date' ? new Date(Math.ceil(retryAtMs / 1000) * 1000).toUTCString() : String(seconds));
  sendJson(res, 429, { errors: [{ message }] });
}

/**
 * The quota's headers. X-RateLimit-Reset is the reset as epoch seconds rounded up once, as
 * express-rate-limit writes it (`Math.ceil(resetTime / 1000)`) and GitHub's is a whole second.
 */
export function setRateLimitHeaders(res: ServerResponse, kind: 'ietf' | 'x', st: { limit: number; remaining: number; resetSeconds: number; resetAtMs: number }): void {
  const prefix = kind === 'ietf' ? 'RateLimit' : 'X-RateLimit';
  res.setHeader(`${prefix}-Limit`, String(st.limit));
  res.setHeader(`${prefix}-Remaining`, String(st.remaining));
  res.setHeader(`${prefix}-Reset`, String(kind === 'ietf' ? st.resetSeconds : Math.ceil(st.resetAtMs / 1000)));
}

/** The whole body, or 'too-large' (the rest is read and dropped so the connection stays usable). */
export async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size > MAX_BODY_BYTES ? 'too-large' : Buffer.concat(chunks);
}

/** The request body as {query, variables?, operationName?}, or the message of a 400 answer. */
export function parseRequest(body: Buffer): ReportingRequest | string {
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

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const buf = Buffer.from(JSON.stringify(body), 'utf8');
  sendChunks(res, status, [buf]);
}

export function sendChunks(res: ServerResponse, status: number, chunks: Buffer[], contentType = JSON_TYPE): void {
  let length = 0;
  for (const c of chunks) length += c.length;
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': length });
  res.cork();
  for (const c of chunks) res.write(c);
  res.end();
}

/** 500 in the endpoint's own JSON; 502 and 503 as the plain pages a proxy in front would send. */
export function sendServerError(res: ServerResponse, status: 500 | 502 | 503): void {
  if (status === 500) return sendJson(res, 500, { errors: [{ message: 'Internal server error' }] });
  const text = status === 502 ? '502 Bad Gateway\n' : '503 Service Temporarily Unavailable\n';
  sendChunks(res, status, [Buffer.from(text)], 'text/plain; charset=utf-8');
}

/** The first half of the body's bytes (never valid JSON: the brackets are left open). */
export function cutInHalf(chunks: Buffer[], bytes: number): Buffer[] {
  let remaining = Math.floor(bytes / 2);
  const out: Buffer[] = [];
  for (const c of chunks) {
    if (remaining <= 0) break;
    out.push(c.length <= remaining ? c : c.subarray(0, remaining));
    remaining -= c.length;
  }
  return out;
}
