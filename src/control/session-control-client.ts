import { describeRedirect, isRedirect } from '../util/display-url.js';
import { redact } from '../util/redact.js';
import { ControlHttpError } from './errors/control-http-error.js';
import { ControlNetworkError } from './errors/control-network-error.js';
import { InvalidControlResponseError } from './errors/invalid-control-response-error.js';
import {
  EndSessionRequestSchema,
  RemoteViewSessionRequestSchema,
  RemoteViewSessionResponseSchema,
  SessionV1RequestSchema,
  SessionV1ResponseSchema,
  validateRequest,
  type EndSessionRequest,
  type RemoteViewSessionRequest,
  type SessionV1Request,
} from './requests.js';
import type { z } from 'zod';
import { describeIssues, describeNetworkError, parseBody, type FetchLike } from '../auth/http.js';

export type EndSessionMethod = 'DELETE' | 'POST' | 'PUT' | 'PATCH';
export const END_SESSION_METHODS: readonly EndSessionMethod[] = ['DELETE', 'POST', 'PUT', 'PATCH'];
/**
 * The document gives "end session" no method. DELETE is assumed: POST on the collection path reads as
 * "create" (it is the v1 create), and the body names the session to remove.
 */
export const DEFAULT_END_SESSION_METHOD: EndSessionMethod = 'DELETE';

export interface SessionControlClientOptions {
  /** {base_url} */
  baseUrl: string;
  /** The Bearer token (scope `remoteview;settings`), or a function giving a valid one (`TokenManager.getAccessToken`). */
  accessToken: string | (() => Promise<string>);
  fetch?: FetchLike;
  /** 30 s by default. */
  timeoutMs?: number;
  endSessionMethod?: EndSessionMethod;
  /** Where deprecation warnings go; `process.emitWarning(..., 'DeprecationWarning')` by default. */
  warn?: (message: string) => void;
}

export interface RemoteViewSession {
  agentUrl: string | null;
  clientUrl: string | null;
  /** The document's 201 body has no id: taken from the Location header, else from a UUID in agentUrl. */
  sessionId: string | undefined;
}

export interface SessionV1 {
  customerName?: string | null;
  sourceApp?: string | null;
  agentEmail?: string | null;
  sessionType?: number;
  webhooks?: unknown[] | null;
  [field: string]: unknown;
}

export interface EndSessionResult {
  status: number;
  /** Its shape is not published. */
  body: unknown;
  method: EndSessionMethod;
}

export const SESSION_V1_WARNING = 'the v1 session path (POST /api/v1/Session) is deprecated: use the v2 remote-view start instead.';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/**
 * Client of the session control endpoints: requests are validated before they are sent; failures
 * carry the status and body that came back. Nothing is retried: starting a session is not idempotent.
 */
export class SessionControlClient {
  private readonly fetchImpl: FetchLike;
  private readonly timeoutMs: number;
  private readonly warn: (message: string) => void;

  constructor(private readonly opts: SessionControlClientOptions) {
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.warn = opts.warn ?? ((m) => process.emitWarning(m, { type: 'DeprecationWarning', code: 'SESSION_ETL_SESSION_V1' }));
  }

  /** POST {base_url}/api/v2/Session/RemoteView: 201 with agentUrl and clientUrl. */
  async startRemoteViewSession(request: RemoteViewSessionRequest = {}): Promise<RemoteViewSession> {
    const what = 'starting a remote-view session';
    const body = validateRequest(RemoteViewSessionRequestSchema, request, what);
    const res = await this.send('POST', '/api/v2/Session/RemoteView', body, what);
    const parsed = check(RemoteViewSessionResponseSchema, res, what);
    return {
      agentUrl: parsed.agentUrl,
      clientUrl: parsed.clientUrl,
      sessionId: sessionIdOf(res.location, parsed.agentUrl, this.opts.baseUrl),
    };
  }

  /** Deprecated (emits a warning): POST {base_url}/api/v1/Session; 201 with the same fields as the request. */
  async createSessionV1(request: SessionV1Request): Promise<SessionV1> {
    const what = 'creating a session (v1)';
    const body = validateRequest(SessionV1RequestSchema, request, what);
    this.warn(SESSION_V1_WARNING);
    const res = await this.send('POST', '/api/v1/Session', body, what);
    return check(SessionV1ResponseSchema, res, what) as SessionV1;
  }

  /** {base_url}/api/v2/Session with sessionId, endSource, showWrapup; the method is an assumption (DEFAULT_END_SESSION_METHOD). */
  async endSession(request: EndSessionRequest, options: { method?: EndSessionMethod } = {}): Promise<EndSessionResult> {
    const what = 'ending the session';
    const body = validateRequest(EndSessionRequestSchema, request, what);
    const method = options.method ?? this.opts.endSessionMethod ?? DEFAULT_END_SESSION_METHOD;
    const res = await this.send(method, '/api/v2/Session', body, what);
    return { status: res.status, body: res.body, method };
  }

  private async send(
    method: string,
    path: string,
    body: unknown,
    what: string,
  ): Promise<{ status: number; body: unknown; location: string | undefined }> {
    const url = this.opts.baseUrl.replace(/\/+$/, '') + path;
    const token = typeof this.opts.accessToken === 'string' ? this.opts.accessToken : await this.opts.accessToken();
    let res: Response;
    let text: string;
    try {
      res = await this.fetchImpl(url, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        // Never follow a redirect: the access token and webhook tokens are in this request.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      throw new ControlNetworkError(`${what} failed: the console at ${url} could not be reached: ${describeNetworkError(err)}`, err);
    }
    const parsed = parseBody(text);
    if (isRedirect(res.status)) {
      const where = describeRedirect(res.status, res.headers.get('location'), url);
      throw new ControlHttpError(res.status, `${where}; redirects are not followed (the access token would go with them): set CONSOLE_URL to the console's own address`, what);
    }
    if (!res.ok) throw new ControlHttpError(res.status, parsed, what);
    return { status: res.status, body: parsed, location: res.headers.get('location') ?? undefined };
  }
}

function check<S extends z.ZodType>(schema: S, res: { status: number; body: unknown }, what: string): z.output<S> {
  const parsed = schema.safeParse(res.body);
  if (parsed.success) return parsed.data;
  const issues = describeIssues(parsed.error);
  throw new InvalidControlResponseError(
    `${what}: the console answered HTTP ${res.status} with an unexpected body: ${redact(issues.join('; '))}`,
    res.status,
    res.body,
    issues,
  );
}

function sessionIdOf(location: string | undefined, agentUrl: string | null, base: string): string | undefined {
  return (location && UUID.exec(new URL(location, base).pathname)?.[0]) || (agentUrl ? UUID.exec(agentUrl)?.[0] : undefined);
}
