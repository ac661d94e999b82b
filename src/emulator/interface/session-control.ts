import { randomInt, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson } from './http.js';
import { authenticate } from './identity.js';
import type { EmulatedEndSessionMethod, InterfaceState } from './state.js';

/** Failure bodies are not published; the emulator answers `{ message }` with a plausible status. */
const fail = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) =>
  sendJson(res, status, { message }, headers);

type Route = 'start' | 'v1' | 'end';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The session control paths on the console host:
 * - POST /api/v2/Session/RemoteView → 201 {agentUrl, clientUrl}, Location /api/v2/Session/{id}
 * - POST /api/v1/Session (deprecated) → 201 with the request's fields
 * - /api/v2/Session (method: any of options.endSessionMethods) → 204
 * Each needs a valid Bearer token (401) with the scope `remoteview;settings` (403).
 * Returns false for other /api/ paths.
 */
export async function handleSessionControl(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  state: InterfaceState,
  now: number,
): Promise<boolean> {
  const path = url.pathname.replace(/\/+$/, '').toLowerCase();
  let route: Route;
  if (path === '/api/v2/session/remoteview') route = 'start';
  else if (path === '/api/v1/session') route = 'v1';
  else if (path === '/api/v2/session') route = 'end';
  else return false;
  await control(req, res, route, state, now);
  return true;
}

async function control(req: IncomingMessage, res: ServerResponse, route: Route, state: InterfaceState, now: number): Promise<void> {
  const method = req.method ?? 'GET';
  const allowed: string[] = route === 'end' ? state.options.endSessionMethods : ['POST'];
  if (!allowed.includes(method)) return fail(res, 405, `use ${allowed.join(', ')}`, { allow: allowed.join(', ') });
  const token = authenticate(req, res, state, now);
  if (!token) return;
  // Scopes are split on spaces and semicolons; `remoteview;settings` is two.
  const scopes = new Set(token.scope.toLowerCase().split(/[\s;]+/).filter(Boolean));
  if (!scopes.has('remoteview') || !scopes.has('settings')) return fail(res, 403, 'the access token lacks the scope remoteview;settings');
  const text = await readBody(req);
  if (text === undefined) return fail(res, 413, 'body too large');
  let body: Record<string, unknown>;
  try {
    const parsed: unknown = text === '' ? {} : JSON.parse(text);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    body = parsed as Record<string, unknown>;
  } catch {
    return fail(res, 400, 'the body must be a JSON object');
  }

  if (route === 'end') return endSession(res, body, method as EmulatedEndSessionMethod, state, now);
  const problem = checkCreate(body, route === 'v1');
  if (problem) return fail(res, 400, problem);
  const id = randomUUID();
  state.sessions.set(id, { id, kind: route === 'v1' ? 'v1' : 'RemoteView', createdAt: now, request: body });
  state.counters.sessionStarts++;
  const headers = { location: `/api/v2/Session/${id}` };
  if (route === 'v1') {
    const echo: Record<string, unknown> = {};
    for (const k of ['customerName', 'sourceApp', 'agentEmail', 'sessionType', 'webhooks']) echo[k] = body[k] ?? null;
    sendJson(res, 201, echo, headers);
  } else {
    const origin = `http://${req.headers.host ?? '127.0.0.1'}`;
    const pin = String(randomInt(100000, 1000000));
    sendJson(res, 201, { agentUrl: `${origin}/console/session/${id}`, clientUrl: `${origin}/join/${pin}` }, headers);
  }
}

function endSession(res: ServerResponse, body: Record<string, unknown>, method: EmulatedEndSessionMethod, state: InterfaceState, now: number): void {
  const { sessionId, endSource, showWrapup } = body;
  if (typeof sessionId !== 'string' || !UUID.test(sessionId)) return fail(res, 400, 'sessionId must be a UUID');
  if (endSource !== undefined && endSource !== null && typeof endSource !== 'string') return fail(res, 400, 'endSource must be a string or null');
  if (showWrapup !== undefined && typeof showWrapup !== 'boolean') return fail(res, 400, 'showWrapup must be a boolean');
  const session = state.sessions.get(sessionId.toLowerCase());
  if (!session) return fail(res, 404, `no session ${sessionId}`);
  if (session.endedAt !== undefined) return fail(res, 409, `session ${sessionId} has already ended`);
  session.endedAt = now;
  session.endSource = (endSource as string | null | undefined) ?? null;
  session.showWrapup = showWrapup === true;
  session.endMethod = method;
  state.counters.sessionEnds++;
  res.writeHead(204);
  res.end();
}

/** The document's rules for creation bodies; a message for the first one broken. */
function checkCreate(body: Record<string, unknown>, v1: boolean): string | undefined {
  for (const k of ['sourceApp', 'customerName', 'agentEmail']) {
    const v = body[k];
    if (v !== undefined && v !== null && typeof v !== 'string') return `${k} must be a string or null`;
  }
  if (v1) {
    const t = body.sessionType;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > 4) return 'sessionType must be an integer from 0 to 4';
  }
  const hooks = body.webhooks;
  if (hooks === undefined || hooks === null) return undefined;
  if (!Array.isArray(hooks)) return 'webhooks must be an array or null';
  for (const [i, h] of hooks.entries()) {
    if (!h || typeof h !== 'object') return `webhooks[${i}] must be an object`;
    const w = h as Record<string, unknown>;
    if (w.targetUrl !== null && w.targetUrl !== undefined && (typeof w.targetUrl !== 'string' || !URL.canParse(w.targetUrl))) {
      return `webhooks[${i}].targetUrl must be a URL or null`;
    }
    if (w.authorizationToken !== null && w.authorizationToken !== undefined && typeof w.authorizationToken !== 'string') {
      return `webhooks[${i}].authorizationToken must be a string or null`;
    }
    if (typeof w.type !== 'number' || !Number.isInteger(w.type)) return `webhooks[${i}].type must be an integer`;
  }
  return undefined;
}
