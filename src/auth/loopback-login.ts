import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listen } from '../util/listen.js';
import { buildAuthorizeUrl } from './authorize-url.js';
import { createPkcePair } from './pkce.js';
import { AuthorizationResponseError } from './errors/authorization-response-error.js';
import { parseCodeRedirect } from './redirect.js';
import type { TokenClient } from './token-client.js';
import type { TokenResponse } from './token-response.js';

export const SESSION_CONTROL_SCOPE = 'remoteview;settings';

export interface LoopbackLoginOptions {
  client: TokenClient;
  /** SESSION_CONTROL_SCOPE by default. */
  scope?: string | readonly string[];
  /** 0 (any free port) by default. */
  redirectPort?: number;
  /** Opens a browser, or prints the URL; called once the listener is up, may return before the person has finished. */
  openUrl: (url: string) => void | Promise<void>;
  /** 5 minutes by default. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface LoopbackLoginResult {
  tokens: TokenResponse;
  redirectUri: string;
}

const PAGE = (title: string, text: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${text}</p></body></html>`;

/**
 * The authorization code flow with a listener on 127.0.0.1 and PKCE. A callback whose state is not ours (any page or
 * program may request the loopback address) is answered and ignored: only the real answer ends the wait.
 */
export async function loginWithLoopback(opts: LoopbackLoginOptions): Promise<LoopbackLoginResult> {
  const state = randomBytes(24).toString('base64url');
  const pkce = opts.client.variant === 'oldest' ? undefined : createPkcePair();
  const server = createServer();
  const url = await listen(server, opts.redirectPort ?? 0, '127.0.0.1');
  try {
    const redirectUri = `${url}callback`;
    const authorizeUrl = buildAuthorizeUrl({
      baseUrl: opts.client.baseUrl,
      clientId: opts.client.clientId,
      responseType: 'code',
      redirectUri,
      scope: opts.scope ?? SESSION_CONTROL_SCOPE,
      state,
      variant: opts.client.variant,
      ...(pkce ? { codeChallenge: pkce.challenge } : {}),
    });
    const codePromise = waitForCallback(server, redirectUri, state, opts.timeoutMs ?? 300_000, opts.signal);
    // The answer may come (or fail) before openUrl returns: awaited below, never unhandled meanwhile.
    codePromise.catch(() => {});
    await opts.openUrl(authorizeUrl);
    const { code } = await codePromise;
    const tokens = await opts.client.exchangeCode(code, redirectUri, pkce?.verifier);
    return { tokens, redirectUri };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function waitForCallback(
  server: Server,
  redirectUri: string,
  state: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<{ code: string }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new AuthorizationResponseError(`no answer from the authorize page within ${Math.round(timeoutMs / 1000)} s; sign in again`)),
      timeoutMs,
    );
    const onAbort = () => finish(signal?.reason ?? new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    function finish(err: unknown, value?: { code: string }) {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      server.off('request', onRequest);
      if (value) resolve(value);
      else reject(err);
    }
    function onRequest(req: IncomingMessage, res: ServerResponse) {
      const url = new URL(req.url ?? '/', redirectUri);
      if (req.method !== 'GET' || url.pathname !== '/callback') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      if (url.searchParams.get('state') !== state) {
        res.writeHead(400, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
        res.end(PAGE('Ignored', 'This answer does not belong to the sign-in in progress.'));
        return;
      }
      try {
        const { code } = parseCodeRedirect(url, state);
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
        res.end(PAGE('Signed in', 'session-etl received the authorization. You can close this window.'));
        finish(undefined, { code });
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
        res.end(PAGE('Sign-in failed', 'session-etl could not use this answer; see the terminal.'));
        finish(err);
      }
    }
    server.on('request', onRequest);
    if (signal?.aborted) onAbort();
  });
}
