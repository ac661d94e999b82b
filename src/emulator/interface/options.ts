/** Options of the emulated token service, identity lookup and session control endpoints; see docs/interface.md. */

/** The one user the emulator knows. */
export interface InterfaceEmulatorUser {
  /** Also the token answers' `principal`. Default `agent@example.com`. */
  userName: string;
  givenName: string;
  familyName: string;
  id: string;
  accountKeys: string[];
  /** For the password grant. Default `emulator-password`. */
  password: string;
}

/** Methods the emulator accepts to end a session (the document does not give one). */
export type EmulatedEndSessionMethod = 'DELETE' | 'POST' | 'PUT' | 'PATCH';

export interface InterfaceEmulatorOptions {
  /** The one registered client. Default DEFAULT_INTERFACE_CLIENT_ID. */
  clientId?: string;
  /** Its secret. Default DEFAULT_INTERFACE_CLIENT_SECRET. */
  clientSecret?: string;
  /** Lifetime of access tokens of the current service, seconds. Default 3600. */
  accessTokenTtlSeconds?: number;
  /** Lifetime of refresh tokens, seconds, counted from issue. Default 2592000 (30 days). */
  refreshTokenTtlSeconds?: number;
  /**
   * A refresh exchange issues a new refresh token (and invalidates the one sent) when the one sent
   * has less than this many seconds left; otherwise the answer omits refresh_token and the same
   * refresh token stays valid. Default 604800 (7 days). 0 never rotates; a value above the refresh
   * lifetime always rotates.
   */
  rotateWhenRemainingBelowSeconds?: number;
  /** Whether the deprecated password grant works for the client. Default false (new clients cannot use it). */
  passwordGrantEnabled?: boolean;
  /** Lifetime of authorization codes, seconds. Default 600. */
  codeTtlSeconds?: number;
  /** Where /oauth/authorize sends the browser when the request has no redirect_uri. Default none (400). */
  registeredRedirectUri?: string;
  /** The signed-in user (fields not given take their defaults). */
  user?: Partial<InterfaceEmulatorUser>;
  /** Methods accepted on {base_url}/api/v2/Session to end a session; others get 405. Default all four. */
  endSessionMethods?: EmulatedEndSessionMethod[];
  /**
   * Extra refresh tokens treated as issued by the former provider (answered 400 invalid_request /
   * unsupported.jwt at /oauth/token). Any JWT-shaped refresh token (three base64url parts joined by
   * dots) is treated so too, like the ones /oauth2/v2/token issues.
   */
  formerProviderRefreshTokens?: string[];
}

export const DEFAULT_INTERFACE_CLIENT_ID = 'session-etl-emulator';
/** A well-known value for the local emulator only: it protects nothing. */
export const DEFAULT_INTERFACE_CLIENT_SECRET = 'emulator-client-secret';

export const DEFAULT_INTERFACE_USER: InterfaceEmulatorUser = {
  userName: 'agent@example.com',
  givenName: 'Ada',
  familyName: 'Agent',
  id: '5087412936511430',
  accountKeys: ['1234567890123456789'],
  password: 'emulator-password',
};

export interface ResolvedInterfaceOptions {
  clientId: string;
  clientSecret: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  rotateWhenRemainingBelowSeconds: number;
  passwordGrantEnabled: boolean;
  codeTtlSeconds: number;
  registeredRedirectUri: string | undefined;
  user: InterfaceEmulatorUser;
  endSessionMethods: EmulatedEndSessionMethod[];
  formerProviderRefreshTokens: Set<string>;
}

export function resolveInterfaceOptions(o: InterfaceEmulatorOptions | undefined): ResolvedInterfaceOptions {
  return {
    clientId: o?.clientId ?? DEFAULT_INTERFACE_CLIENT_ID,
    clientSecret: o?.clientSecret ?? DEFAULT_INTERFACE_CLIENT_SECRET,
    accessTokenTtlSeconds: o?.accessTokenTtlSeconds ?? 3600,
    refreshTokenTtlSeconds: o?.refreshTokenTtlSeconds ?? 30 * 86400,
    rotateWhenRemainingBelowSeconds: o?.rotateWhenRemainingBelowSeconds ?? 7 * 86400,
    passwordGrantEnabled: o?.passwordGrantEnabled ?? false,
    codeTtlSeconds: o?.codeTtlSeconds ?? 600,
    registeredRedirectUri: o?.registeredRedirectUri,
    user: { ...DEFAULT_INTERFACE_USER, ...o?.user },
    endSessionMethods: o?.endSessionMethods ?? ['DELETE', 'POST', 'PUT', 'PATCH'],
    formerProviderRefreshTokens: new Set(o?.formerProviderRefreshTokens ?? []),
  };
}

/**
 * The environment for pointing the CLI at an emulator listening on `url`: AUTH_URL, API_URL,
 * CONSOLE_URL (all the emulator), OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET.
 */
export function interfaceEmulatorEnv(url: string, options?: InterfaceEmulatorOptions): Record<string, string> {
  const base = url.replace(/\/+$/, '');
  const o = resolveInterfaceOptions(options);
  return { AUTH_URL: base, API_URL: base, CONSOLE_URL: base, OAUTH_CLIENT_ID: o.clientId, OAUTH_CLIENT_SECRET: o.clientSecret };
}
