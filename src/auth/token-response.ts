import { z } from 'zod';
import { registerSecret } from '../util/redact.js';
import { describeIssues } from './http.js';
import { MAX_SECRET_TEXT, secretTooLarge } from '../util/secret-size.js';
import { InvalidTokenResponseError } from './errors/invalid-token-response-error.js';
import type { TokenServiceVariant } from './variants.js';

/** The extra user fields the superseded token services sent with a token: kept aside, never lost. */
export interface LegacyUserFields {
  account_key?: string;
  organizer_key?: string;
  email?: string;
  firstName?: string;
  lastName?: string;
  version?: string;
  account_type?: string;
  platform?: string;
  [field: string]: unknown;
}

/**
 * One token shape for every variant, the current service's: `type` → `token_type`, `username` → `principal`,
 * `expires_in` an integer of seconds (the former provider's were milliseconds).
 */
export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in?: number;
  /** Space-separated. */
  scope?: string;
  principal?: string;
  /** Only when a new refresh token was issued; it invalidates the previous one. */
  refresh_token?: string;
  user_fields?: LegacyUserFields;
  variant: TokenServiceVariant;
}

const expiresIn = z.union([z.number(), z.string().regex(/^\s*\d+(\.\d+)?\s*$/, 'a number of seconds')]).transform(Number);

const RawTokenResponse = z
  .looseObject({
    access_token: z.string().min(1),
    token_type: z.string().optional(),
    /** Former provider's name for token_type. */
    type: z.string().optional(),
    expires_in: expiresIn.optional(),
    scope: z.string().optional(),
    principal: z.string().optional(),
    /** Former provider's name for principal. */
    username: z.string().optional(),
    refresh_token: z.string().min(1).optional(),
  });

const TOKEN_FIELDS = new Set(['access_token', 'token_type', 'type', 'expires_in', 'scope', 'principal', 'username', 'refresh_token', 'state']);

/**
 * A token service answer (JSON body, or an implicit-flow fragment's parameters) as a `TokenResponse`, its tokens
 * registered as secrets first. Throws `InvalidTokenResponseError` for no usable access token or one over 4 KiB.
 */
export function normalizeTokenResponse(raw: unknown, variant: TokenServiceVariant): TokenResponse {
  if (raw && typeof raw === 'object') {
    const r = raw as Record<string, unknown>;
    registerSecret(typeof r.access_token === 'string' ? r.access_token : undefined);
    registerSecret(typeof r.refresh_token === 'string' ? r.refresh_token : undefined);
    // Larger than any real token: refused (never stored, never shown), like an oversized key.
    for (const field of ['access_token', 'refresh_token'] as const) {
      const v = r[field];
      if (typeof v === 'string' && secretTooLarge(v)) {
        const issue = `${field}: longer than ${MAX_SECRET_TEXT}, longer than any real token (nothing of it is shown)`;
        throw new InvalidTokenResponseError(`the ${variant} token service sent an answer that is not a usable token: ${issue}`, [issue]);
      }
    }
  }
  const parsed = RawTokenResponse.safeParse(raw);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error);
    throw new InvalidTokenResponseError(`the ${variant} token service sent an answer that is not a token: ${issues.join('; ')}`, issues);
  }
  const p = parsed.data;
  let seconds = p.expires_in;
  // The former provider counted in milliseconds; round down so a token is never believed to live longer.
  if (seconds !== undefined && variant === 'former-provider') seconds = seconds / 1000;
  if (seconds !== undefined) seconds = Math.floor(seconds);

  const extra: LegacyUserFields = {};
  for (const [k, v] of Object.entries(p)) if (!TOKEN_FIELDS.has(k)) extra[k] = v;

  const out: TokenResponse = {
    access_token: p.access_token,
    token_type: p.token_type ?? p.type ?? 'Bearer',
    variant,
  };
  if (seconds !== undefined) out.expires_in = seconds;
  if (p.scope !== undefined) out.scope = p.scope;
  const principal = p.principal ?? p.username;
  if (principal !== undefined) out.principal = principal;
  if (p.refresh_token !== undefined) out.refresh_token = p.refresh_token;
  if (Object.keys(extra).length > 0) out.user_fields = extra;
  return out;
}
