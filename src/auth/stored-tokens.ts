import { z } from 'zod';
import { registerSecret } from '../util/redact.js';
import type { LegacyUserFields, TokenResponse } from './token-response.js';
import { TOKEN_SERVICE_VARIANTS } from './variants.js';

/** What is kept between runs: the tokens, when they expire, and which service and client they belong to. */
const StoredTokensSchema = z.object({
  version: z.literal(1),
  authUrl: z.string(),
  clientId: z.string(),
  variant: z.enum(TOKEN_SERVICE_VARIANTS as [string, ...string[]]),
  accessToken: z.string().min(1),
  tokenType: z.string(),
  /** Epoch milliseconds, as obtainedAt (login or last refresh). */
  expiresAt: z.number(),
  obtainedAt: z.number(),
  /** The last one issued (an issued one invalidates the previous). */
  refreshToken: z.string().min(1).optional(),
  refreshTokenIssuedAt: z.number().optional(),
  scope: z.string().optional(),
  principal: z.string().optional(),
  userFields: z.record(z.string(), z.unknown()).optional(),
});
export type StoredTokens = z.infer<typeof StoredTokensSchema> & { variant: TokenResponse['variant']; userFields?: LegacyUserFields };

/** For an answer without expires_in: the shortest lifetime the document names (the v2 proxy's), so refreshed early rather than late. */
export const DEFAULT_EXPIRES_IN_SECONDS = 3600;

/** The stored tokens after a token answer; without a new refresh token the previous one stays. */
export function applyTokenResponse(
  previous: StoredTokens | undefined,
  res: TokenResponse,
  ctx: { authUrl: string; clientId: string; now: number },
): StoredTokens {
  const out: StoredTokens = {
    version: 1,
    authUrl: ctx.authUrl,
    clientId: ctx.clientId,
    variant: res.variant,
    accessToken: res.access_token,
    tokenType: res.token_type,
    expiresAt: ctx.now + (res.expires_in ?? DEFAULT_EXPIRES_IN_SECONDS) * 1000,
    obtainedAt: ctx.now,
  };
  if (res.refresh_token !== undefined) {
    out.refreshToken = res.refresh_token;
    out.refreshTokenIssuedAt = ctx.now;
  } else if (previous?.refreshToken !== undefined) {
    out.refreshToken = previous.refreshToken;
    if (previous.refreshTokenIssuedAt !== undefined) out.refreshTokenIssuedAt = previous.refreshTokenIssuedAt;
  }
  const scope = res.scope ?? previous?.scope;
  if (scope !== undefined) out.scope = scope;
  const principal = res.principal ?? previous?.principal;
  if (principal !== undefined) out.principal = principal;
  const userFields = res.user_fields ?? previous?.userFields;
  if (userFields !== undefined) out.userFields = userFields;
  return out;
}

/** Parses stored tokens (from a file) and registers their secrets; undefined when the content is not stored tokens. */
export function readStoredTokens(value: unknown): StoredTokens | undefined {
  const parsed = StoredTokensSchema.safeParse(value);
  if (!parsed.success) return undefined;
  registerSecret(parsed.data.accessToken);
  registerSecret(parsed.data.refreshToken);
  return parsed.data as StoredTokens;
}

/** A description of stored tokens that holds no token value: for `auth status` and logs. */
export interface TokenSummary {
  authUrl: string;
  clientId: string;
  variant: string;
  principal: string | undefined;
  scopes: string[];
  tokenType: string;
  expiresAt: string;
  /** Negative once expired. */
  expiresInSeconds: number;
  expired: boolean;
  hasRefreshToken: boolean;
  obtainedAt: string;
}

export function summarizeTokens(t: StoredTokens, now: number): TokenSummary {
  return {
    authUrl: t.authUrl,
    clientId: t.clientId,
    variant: t.variant,
    principal: t.principal ?? (typeof t.userFields?.email === 'string' ? t.userFields.email : undefined),
    scopes: splitScopes(t.scope),
    tokenType: t.tokenType,
    expiresAt: new Date(t.expiresAt).toISOString(),
    expiresInSeconds: Math.floor((t.expiresAt - now) / 1000),
    expired: t.expiresAt <= now,
    hasRefreshToken: t.refreshToken !== undefined,
    obtainedAt: new Date(t.obtainedAt).toISOString(),
  };
}

export function splitScopes(scope: string | undefined): string[] {
  return (scope ?? '').split(' ').filter((s) => s !== '');
}
