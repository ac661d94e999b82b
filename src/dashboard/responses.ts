/** The dashboard's answers: JSON, text, 401, and a download written at the pace its client reads. */
import type { ServerResponse } from 'node:http';

/** The client of a download left, or stopped reading: nothing to answer. */
export class ClientGoneError extends Error {}

/** Writes `text`, waiting while the buffer is full (backpressure); a client gone, or reading nothing for `stallMs`, ends it. */
export function writeOrWait(res: ServerResponse, text: string, stallMs: number): Promise<void> {
  if (res.destroyed) return Promise.reject(new ClientGoneError('the client left'));
  if (res.write(text)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(stall);
      res.off('drain', done);
      res.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onClose = () => done(new ClientGoneError('the client left'));
    const stall = setTimeout(() => {
      res.destroy();
      done(new ClientGoneError(`the client read nothing for ${stallMs / 1000} s`));
    }, stallMs);
    res.once('drain', done);
    res.once('close', onClose);
  });
}

/** 401: JSON for the API, a line of text for a person who opened the page without the token. */
export function unauthorized(res: ServerResponse, path: string, expired = false): void {
  res.setHeader('WWW-Authenticate', 'Bearer realm="session-etl dashboard"');
  const reason = expired
    ? 'this browser session of the dashboard has expired: open the address the dashboard printed (Dashboard: http://…/?token=…) again'
    : 'an access token is required: open the address the dashboard printed (Dashboard: http://…/?token=…), or send Authorization: Bearer <token>';
  if (path.startsWith('/api/')) return json(res, { error: reason }, 401);
  send(res, 401, `session-etl dashboard: ${reason}\n`, 'text/plain; charset=utf-8', NO_STORE);
}

export const JSON_TYPE = 'application/json; charset=utf-8';
export const NO_STORE = { 'Cache-Control': 'no-store' };

export function json(res: ServerResponse, body: unknown, status = 200): void {
  send(res, status, JSON.stringify(body), JSON_TYPE, NO_STORE);
}

export function send(res: ServerResponse, status: number, body: string | Buffer, type: string, headers: Record<string, string> = {}, headOnly = false): void {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(headOnly ? undefined : body);
}
