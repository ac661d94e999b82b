import { randomBytes } from 'node:crypto';
import { resolveInterfaceOptions, type InterfaceEmulatorOptions, type ResolvedInterfaceOptions } from './options.js';

/** The token services the emulator plays, by the client's names for them. */
export type EmulatedVariant = 'current' | 'v2-proxy' | 'oldest' | 'former-provider';

export interface IssuedCode {
  clientId: string;
  /** The redirect_uri given at authorize; undefined when none was (the exchange then ignores it). */
  redirectUri: string | undefined;
  scope: string;
  variant: EmulatedVariant;
  expiresAt: number;
  used: boolean;
  /** The PKCE S256 challenge given at authorize, if any: the exchange must then carry its verifier. */
  codeChallenge?: string;
}

export interface IssuedToken {
  clientId: string;
  scope: string;
  variant: EmulatedVariant;
  /** Epoch seconds. */
  expiresAt: number;
}

export interface IssuedRefreshToken extends IssuedToken {
  /** Set when a newer refresh token replaced this one. */
  replacedBy?: string;
}

export interface EmulatedSession {
  id: string;
  kind: 'RemoteView' | 'v1';
  createdAt: number;
  endedAt?: number;
  endSource?: string | null;
  showWrapup?: boolean;
  /** The method the session was ended with. */
  endMethod?: string;
  request: Record<string, unknown>;
}

/** Request counts by endpoint and grant, for tests ("concurrent refreshes collapse to one"). */
export interface InterfaceCounters {
  authorize: number;
  /** By grant_type, at every token endpoint. */
  grants: Record<string, number>;
  identity: number;
  sessionStarts: number;
  sessionEnds: number;
}

/** Everything one emulator instance remembers. */
export class InterfaceState {
  readonly options: ResolvedInterfaceOptions;
  readonly codes = new Map<string, IssuedCode>();
  readonly accessTokens = new Map<string, IssuedToken>();
  readonly refreshTokens = new Map<string, IssuedRefreshToken>();
  readonly sessions = new Map<string, EmulatedSession>();
  readonly counters: InterfaceCounters = { authorize: 0, grants: {}, identity: 0, sessionStarts: 0, sessionEnds: 0 };

  constructor(options: InterfaceEmulatorOptions | undefined) {
    this.options = resolveInterfaceOptions(options);
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
    return this.options.formerProviderRefreshTokens.has(token) || JWT_SHAPE.test(token);
  }
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

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

/**
 * The state of the emulator started with this `interface` options object (undefined before its
 * first interface request). For tests: counters, issued tokens, sessions.
 */
export function inspectInterfaceEmulator(options: InterfaceEmulatorOptions): InterfaceState | undefined {
  return states.get(options);
}
