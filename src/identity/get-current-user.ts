import { describeRedirect, isRedirect } from '../util/display-url.js';
import { z } from 'zod';
import { describeIssues, describeNetworkError, parseBody, summarizeBody, type FetchLike } from '../auth/http.js';
import { IdentityError } from './errors/identity-error.js';

export interface CurrentUser {
  id: string;
  userName: string;
  givenName: string | undefined;
  familyName: string | undefined;
  accountKeys: string[];
  /** The whole record as it came (its other fields are not published). */
  record: Record<string, unknown>;
}

export interface GetCurrentUserOptions {
  /** Host of the identity lookup, {api_url}. */
  apiUrl: string;
  /** A Bearer token (no scope needed), or a function giving a valid one. */
  accessToken: string | (() => Promise<string>);
  fetch?: FetchLike;
  timeoutMs?: number;
}

const IdentityRecordSchema = z.looseObject({
  id: z.union([z.string(), z.number()]).transform(String),
  userName: z.string(),
  name: z.looseObject({ givenName: z.string().optional(), familyName: z.string().optional() }).optional(),
});

/** GET {api_url}/identity/v1/Users/me with a Bearer token. */
export async function getCurrentUser(opts: GetCurrentUserOptions): Promise<CurrentUser> {
  const url = opts.apiUrl.replace(/\/+$/, '') + '/identity/v1/Users/me';
  const token = typeof opts.accessToken === 'string' ? opts.accessToken : await opts.accessToken();
  let res: Response;
  let text: string;
  try {
    res = await (opts.fetch ?? globalThis.fetch)(url, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      // Never follow a redirect: the access token would go with it.
      redirect: 'manual',
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
    });
    text = await res.text();
  } catch (err) {
    throw new IdentityError(`the identity lookup at ${url} could not be reached: ${describeNetworkError(err)}`, { cause: err, retryable: true });
  }
  const body = parseBody(text);
  if (isRedirect(res.status)) {
    const where = describeRedirect(res.status, res.headers.get('location'), url);
    throw new IdentityError(`the identity lookup answered ${where}; redirects are not followed (the access token would go with them): set API_URL to the identity service's own address`, {
      status: res.status,
      retryable: false,
    });
  }
  if (!res.ok) {
    const shown = summarizeBody(body);
    throw new IdentityError(`the identity lookup answered HTTP ${res.status}${shown ? `: ${shown}` : ''}`, {
      status: res.status,
      body,
      retryable: res.status === 429 || res.status >= 500,
    });
  }
  const parsed = IdentityRecordSchema.safeParse(body);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error).join('; ');
    throw new IdentityError(`the identity lookup answered with a body that is not an identity record: ${issues}`, {
      status: res.status,
      body,
      retryable: false,
    });
  }
  const record = parsed.data;
  return {
    id: record.id,
    userName: record.userName,
    givenName: record.name?.givenName,
    familyName: record.name?.familyName,
    accountKeys: accountKeysOf(record),
    record: body as Record<string, unknown>,
  };
}

/**
 * The document only says "an array of accounts that holds the account key": `accounts` is looked for
 * at the top level and in extension objects (SCIM style), each key read from `value`, `accountKey`,
 * `key` or `account_key` (or the element itself when it is a string or number).
 */
export function accountKeysOf(record: Record<string, unknown>): string[] {
  const keys = new Set<string>();
  for (const v of [record, ...Object.values(record)]) {
    const accounts = v && typeof v === 'object' && !Array.isArray(v) ? (v as { accounts?: unknown }).accounts : undefined;
    if (!Array.isArray(accounts)) continue;
    for (const a of accounts) {
      const o = a as Record<string, unknown>;
      const key: unknown = a && typeof a === 'object' ? (o.value ?? o.accountKey ?? o.key ?? o.account_key) : a;
      if ((typeof key === 'string' && key !== '') || typeof key === 'number') keys.add(String(key));
    }
  }
  return [...keys];
}
