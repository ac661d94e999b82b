/**
 * The dashboard's access token: every request must prove it (the page shows customer names, IPs
 * and notes, which the data directory's modes keep from other local users). A fixed token is read
 * from the environment or a file, never from a flag (a flag's value is visible to every user in the
 * process list); without one, a random token is made at each start and printed once, in the
 * address on the first line of stdout (as Jupyter does). Requests prove it with an
 * `Authorization: Bearer …` header, or with a cookie set after one visit to `?token=…`: the cookie
 * holds a random session id, never the token, and is named after the port (cookies are shared by
 * every port of a host, so two dashboards on one host would otherwise overwrite each other's).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

export const TOKEN_ENV = 'SESSION_ETL_DASHBOARD_TOKEN';
const MIN_LENGTH = 16;

/** A token for one start of the dashboard: 192 random bits, URL-safe (no encoding in the address). */
export function generateAccessToken(): string {
  return randomBytes(24).toString('base64url');
}

/** The session cookie's name for the dashboard on this port. */
export function sessionCookieName(port: number): string {
  return `session_etl_dashboard_${port}`;
}

/** A token source that cannot be used: exit 2 with this message. */
export class TokenSetupError extends Error {}

/** The token from --token-file or the environment; null when neither gives one. */
export function loadAccessToken(opts: { tokenFile?: string; env?: NodeJS.ProcessEnv }): string | null {
  let token: string | undefined;
  if (opts.tokenFile) {
    let mode: number;
    try {
      mode = statSync(opts.tokenFile).mode;
      token = readFileSync(opts.tokenFile, 'utf8').trim();
    } catch (err) {
      throw new TokenSetupError(`cannot read the token file ${opts.tokenFile} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    if (mode & 0o077) {
      throw new TokenSetupError(
        `the token file ${opts.tokenFile} can be read by others (mode ${(mode & 0o777).toString(8)}): chmod 600 ${opts.tokenFile}`,
      );
    }
  } else {
    token = (opts.env ?? process.env)[TOKEN_ENV]?.trim() || undefined;
  }
  if (token === undefined) return null;
  if (token.length < MIN_LENGTH || /\s/.test(token)) {
    throw new TokenSetupError(
      `the dashboard access token (${opts.tokenFile ? `in ${opts.tokenFile}` : TOKEN_ENV}) must be at least ${MIN_LENGTH} characters without spaces; make one with: openssl rand -hex 24`,
    );
  }
  return token;
}

/** Compares a presented token with the expected one in constant time. */
export function tokenMatches(expected: string, presented: string | undefined | null): boolean {
  if (!presented) return false;
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(presented).digest();
  return timingSafeEqual(a, b);
}

/** The token of a request's `Authorization: Bearer …` header, if any. */
export function bearerToken(headers: { authorization?: string | undefined }): string | null {
  return /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1] ?? null;
}

/**
 * The value of the cookie `name` as sent, undecoded (a session id is URL-safe as made, so a value
 * that would need decoding is no session of ours: it is simply not found, whatever it holds).
 */
export function cookieValue(headers: { cookie?: string | undefined }, name: string): string | null {
  for (const part of (headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/**
 * The browser sessions opened with the token: random ids, kept in memory (a restart makes a new
 * token and forgets them). At most `max`: the oldest is forgotten first.
 */
export class SessionIds {
  private readonly ids = new Set<string>();
  constructor(private readonly max = 1000) {}

  create(): string {
    const id = randomBytes(32).toString('base64url');
    this.ids.add(id);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value!);
    return id;
  }

  has(id: string | null): boolean {
    return id !== null && this.ids.has(id);
  }
}
