/**
 * The dashboard's access token: every request must prove it (the page shows customer names, IPs
 * and notes, which the data directory's modes keep from other local users). A fixed token comes
 * from the environment or a file, never a flag (visible to every user in the process list); else a
 * random one is made at each start and printed once, in the address on stdout (as Jupyter does).
 * Requests send `Authorization: Bearer …` with the token, or with a browser session the page opened
 * with it (POST /api/session): a random id the page keeps in `sessionStorage` (one origin, its port
 * included). No cookie: a browser sends a host's cookies to every port of it, so another local
 * user listening on another port would get them.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

export const TOKEN_ENV = 'SESSION_ETL_DASHBOARD_TOKEN';
const MIN_LENGTH = 16;

/** 192 random bits, URL-safe (no encoding in the address). */
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

/** In constant time. */
export function tokenMatches(expected: string, presented: string | undefined | null): boolean {
  if (!presented) return false;
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(presented).digest();
  return timingSafeEqual(a, b);
}

export function bearerToken(headers: { authorization?: string | undefined }): string | null {
  return /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1] ?? null;
}

/** How long a browser session lasts from its opening, unless told otherwise: 12 hours. */
export const SESSION_TTL_MS = 12 * 3600_000;

/**
 * Random ids with the time each ends, kept in memory (a restart makes a new token and forgets them):
 * the browser sessions opened with the token, and the one-use tickets of a download the browser
 * makes itself (a link cannot send a header). At most `max`: the oldest is forgotten first.
 */
export class ExpiringIds {
  private readonly ends = new Map<string, number>();
  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly max: number,
    private readonly bytes: number,
  ) {}

  create(): { id: string; expiresAt: number } {
    const id = randomBytes(this.bytes).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    this.ends.set(id, expiresAt);
    if (this.ends.size > this.max) this.ends.delete(this.ends.keys().next().value!);
    return { id, expiresAt };
  }

  /** `live`, `expired` (known, its time is over), or `unknown`; with `take`, a one-use id is gone after. */
  check(id: string | null, take = false): 'live' | 'expired' | 'unknown' {
    const end = id === null ? undefined : this.ends.get(id);
    if (end === undefined) return 'unknown';
    if (take) this.ends.delete(id!);
    return this.now() < end ? 'live' : 'expired';
  }
}
