/**
 * The dashboard's access token: every request must prove it (the page shows customer names, IPs
 * and notes, which the data directory's modes keep from other local users). A fixed token is read
 * from the environment or a file, never from a flag (a flag's value is visible to every user in the
 * process list); without one, a random token is made at each start and printed once, in the
 * address on the first line of stdout (as Jupyter does). Requests prove it with an
 * `Authorization: Bearer …` header holding the token, or a browser session the page opened with it
 * (POST /api/session): a random id, never the token, that the page keeps in `sessionStorage` (one
 * origin, its port included) and sends as the same header. No cookie: a browser sends a host's
 * cookies to every port of it, so another local user listening on another port would get them.
 * A browser session lasts a fixed time from its opening (12 h unless told otherwise), then is refused.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

export const TOKEN_ENV = 'SESSION_ETL_DASHBOARD_TOKEN';
const MIN_LENGTH = 16;

/** A token for one start of the dashboard: 192 random bits, URL-safe (no encoding in the address). */
export function generateAccessToken(): string {
  return randomBytes(24).toString('base64url');
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

/** How long a browser session lasts from its opening, unless told otherwise: 12 hours. */
export const SESSION_TTL_MS = 12 * 3600_000;

/**
 * The browser sessions opened with the token: random ids with the time each ends, kept in memory (a
 * restart makes a new token and forgets them). At most `max`: the oldest is forgotten first.
 */
export class SessionIds {
  private readonly ids = new Map<string, number>();
  constructor(
    private readonly ttlMs = SESSION_TTL_MS,
    private readonly now: () => number = Date.now,
    private readonly max = 1000,
  ) {}

  create(): { id: string; expiresAt: number } {
    const id = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    this.ids.set(id, expiresAt);
    if (this.ids.size > this.max) this.ids.delete(this.ids.keys().next().value!);
    return { id, expiresAt };
  }

  /** `live`, `expired` (known, its time is over), or `unknown`. */
  check(id: string | null): 'live' | 'expired' | 'unknown' {
    if (id === null) return 'unknown';
    const end = this.ids.get(id);
    if (end === undefined) return 'unknown';
    return this.now() < end ? 'live' : 'expired';
  }
}

/**
 * One-use tickets for a download the browser makes itself (a link cannot send a header): made for a
 * live session, good for `ttlMs` (a minute) and one request, then gone.
 */
export class DownloadTickets {
  private readonly tickets = new Map<string, number>();
  constructor(
    private readonly ttlMs = 60_000,
    private readonly now: () => number = Date.now,
    private readonly max = 100,
  ) {}

  create(): string {
    const id = randomBytes(24).toString('base64url');
    this.tickets.set(id, this.now() + this.ttlMs);
    if (this.tickets.size > this.max) this.tickets.delete(this.tickets.keys().next().value!);
    return id;
  }

  /** True once for a ticket made here and not yet past its minute; it is gone after. */
  take(id: string | null): boolean {
    if (id === null) return false;
    const end = this.tickets.get(id);
    if (end === undefined) return false;
    this.tickets.delete(id);
    return this.now() < end;
  }
}
