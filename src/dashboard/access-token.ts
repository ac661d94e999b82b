/**
 * The dashboard's access token: required when it listens on anything but loopback (the page shows
 * customer names, IPs and notes). Read from the environment or a file, never from a flag (a flag's
 * value is visible to every user in the process list). Requests prove it with an
 * `Authorization: Bearer …` header, or a cookie set once after a visit to `/?token=…`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

export const TOKEN_ENV = 'SESSION_ETL_DASHBOARD_TOKEN';
export const TOKEN_COOKIE = 'session_etl_dashboard';
const MIN_LENGTH = 16;

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

/** The token a request presents: its Bearer header, else its cookie. */
export function presentedToken(headers: { authorization?: string | undefined; cookie?: string | undefined }): string | null {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1];
  if (bearer) return bearer;
  for (const part of (headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === TOKEN_COOKIE) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return null;
}
