/** Options and state of the emulated token service, identity lookup and session control; see docs/interface.md, "Emulator". */
import { randomBytes } from 'node:crypto';

/** The one user the emulator knows; `userName` is also the token answers' `principal`. */
export interface InterfaceEmulatorUser {
  userName: string;
  givenName: string;
  familyName: string;
  id: string;
  accountKeys: string[];
  /** For the password grant. */
  password: string;
}

/** Methods the emulator accepts to end a session (the document does not give one). */
export type EmulatedEndSessionMethod = 'DELETE' | 'POST' | 'PUT' | 'PATCH';

/** Every option and its default: docs/interface.md, "Emulator". */
export interface InterfaceEmulatorOptions {
  clientId?: string;
  clientSecret?: string;
  /** Of the current service; the proxies always use 3600. */
  accessTokenTtlSeconds?: number;
  refreshTokenTtlSeconds?: number;
  /** A refresh exchange replaces the refresh token sent when it has less than this left; otherwise the answer omits refresh_token. */
  rotateWhenRemainingBelowSeconds?: number;
  passwordGrantEnabled?: boolean;
  codeTtlSeconds?: number;
  /** Where /oauth/authorize sends the browser when the request has no redirect_uri; none: 400. */
  registeredRedirectUri?: string;
  user?: Partial<InterfaceEmulatorUser>;
  endSessionMethods?: EmulatedEndSessionMethod[];
  /** Refresh tokens answered 400 unsupported.jwt at /oauth/token, besides any JWT-shaped one. */
  formerProviderRefreshTokens?: string[];
}

const DEFAULT_USER: InterfaceEmulatorUser = {
  userName: 'agent@example.com',
  givenName: 'Ada',
  familyName: 'Agent',
  id: '5087412936511430',
  accountKeys: ['1234567890123456789'],
  password: 'emulator-password',
};

function resolveOptions(o: InterfaceEmulatorOptions | undefined) {
  return {
    clientId: o?.clientId ?? 'session-etl-emulator',
    // A well-known value for the local emulator only: it protects nothing.
    clientSecret: o?.clientSecret ?? 'emulator-client-secret',
    accessTokenTtlSeconds: o?.accessTokenTtlSeconds ?? 3600,
    refreshTokenTtlSeconds: o?.refreshTokenTtlSeconds ?? 30 * 86400,
    rotateWhenRemainingBelowSeconds: o?.rotateWhenRemainingBelowSeconds ?? 7 * 86400,
    passwordGrantEnabled: o?.passwordGrantEnabled ?? false,
    codeTtlSeconds: o?.codeTtlSeconds ?? 600,
    registeredRedirectUri: o?.registeredRedirectUri,
    user: { ...DEFAULT_USER, ...o?.user },
    endSessionMethods: o?.endSessionMethods ?? ['DELETE', 'POST', 'PUT', 'PATCH'],
    formerProviderRefreshTokens: new Set(o?.formerProviderRefreshTokens ?? []),
  };
}

/** AUTH_URL, API_URL, CONSOLE_URL (all the emulator at `url`), OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET for the CLI. */
export function interfaceEmulatorEnv(url: string, options?: InterfaceEmulatorOptions): Record<string, string> {
  const base = url.replace(/\/+$/, '');
  const o = resolveOptions(options);
  return { AUTH_URL: base, API_URL: base, CONSOLE_URL: base, OAUTH_CLIENT_ID: o.clientId, OAUTH_CLIENT_SECRET: o.clientSecret };
}

/** The token services the emulator plays, by the client's names for them. */
export type EmulatedVariant = 'current' | 'v2-proxy' | 'oldest' | 'former-provider';

export interface IssuedToken {
  clientId: string;
  scope: string;
  variant: EmulatedVariant;
  expiresAt: number;
}

export interface IssuedCode extends IssuedToken {
  /** The redirect_uri given at authorize; undefined when none was (the exchange then ignores it). */
  redirectUri: string | undefined;
  used: boolean;
  /** The PKCE S256 challenge given at authorize, if any: the exchange must then carry its verifier. */
  codeChallenge?: string;
}

export interface EmulatedSession {
  id: string;
  kind: 'RemoteView' | 'v1';
  createdAt: number;
  endedAt?: number;
  endSource?: string | null;
  showWrapup?: boolean;
  endMethod?: string;
  request: Record<string, unknown>;
}

/** Everything one emulator instance remembers, with request counts for tests ("concurrent refreshes collapse to one"). */
export class InterfaceState {
  readonly options: ReturnType<typeof resolveOptions>;
  readonly codes = new Map<string, IssuedCode>();
  readonly accessTokens = new Map<string, IssuedToken>();
  /** `replacedBy`: set when a newer refresh token replaced this one. */
  readonly refreshTokens = new Map<string, IssuedToken & { replacedBy?: string }>();
  readonly sessions = new Map<string, EmulatedSession>();
  /** `grants` by grant_type, at every token endpoint. */
  readonly counters = { authorize: 0, grants: {} as Record<string, number>, identity: 0, sessionStarts: 0, sessionEnds: 0 };

  constructor(options: InterfaceEmulatorOptions | undefined) {
    this.options = resolveOptions(options);
  }

  issueCode(c: Omit<IssuedCode, 'used' | 'expiresAt'>, now: number): string {
    const code = `emu-code-${random()}`;
    this.codes.set(code, { ...c, used: false, expiresAt: now + this.options.codeTtlSeconds });
    return code;
  }

  issueAccessToken(t: Omit<IssuedToken, 'expiresAt'>, ttlSeconds: number, now: number): string {
    const token = `emu-at-${random()}`;
    this.accessTokens.set(token, { ...t, expiresAt: now + ttlSeconds });
    return token;
  }

  issueRefreshToken(t: Omit<IssuedToken, 'expiresAt'>, now: number): string {
    const token = t.variant === 'former-provider' ? fakeJwt() : `emu-rt-${random()}`;
    this.refreshTokens.set(token, { ...t, expiresAt: now + this.options.refreshTokenTtlSeconds });
    return token;
  }

  /** Whether the refresh token is one of the former provider's (JWT-shaped, or listed in the options). */
  isFormerProviderToken(token: string): boolean {
    return this.options.formerProviderRefreshTokens.has(token) || /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
  }
}

function random(): string {
  return randomBytes(24).toString('base64url');
}

function fakeJwt(): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ jti: random(), iss: 'former-provider' })}.${random()}`;
}

/**
 * One state per emulator instance: keyed by the `interface` options object when there is one
 * (startEmulator passes the same object on every request), else by the HTTP server, so two
 * emulators in one process never share codes, tokens or sessions.
 */
const states = new WeakMap<object, InterfaceState>();

export function stateFor(key: object, options: InterfaceEmulatorOptions | undefined): InterfaceState {
  let s = states.get(key);
  if (!s) {
    s = new InterfaceState(options);
    states.set(key, s);
  }
  return s;
}

/** The state of the emulator started with this `interface` options object (undefined before its first interface request). */
export function inspectInterfaceEmulator(options: InterfaceEmulatorOptions): InterfaceState | undefined {
  return states.get(options);
}
