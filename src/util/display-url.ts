/**
 * A URL as it may be printed: without its user:password part, and (for a URL chosen by a server,
 * such as a redirect's Location) without its query and fragment, which may carry tokens.
 */
export function displayUrl(url: string | URL, opts: { base?: string; keepQuery?: boolean } = {}): string {
  let u: URL;
  try {
    u = new URL(String(url), opts.base);
  } catch {
    return '(not a valid URL)';
  }
  u.username = '';
  u.password = '';
  if (opts.keepQuery) return u.toString();
  const hidden = u.search !== '' || u.hash !== '';
  u.search = '';
  u.hash = '';
  return `${u.toString()}${hidden ? '?…' : ''}`;
}

export function isRedirect(status: number): boolean {
  return status >= 300 && status < 400;
}

/** What a redirect that was not followed said: `HTTP 302 to http://host/path`, for an error message. */
export function describeRedirect(status: number, location: string | null, base: string): string {
  return `HTTP ${status} redirecting to ${location ? displayUrl(location, { base }) : '(no Location header)'}`;
}
