import { joinUrl, VARIANT_ENDPOINTS, type TokenServiceVariant } from './variants.js';

export interface AuthorizeUrlOptions {
  /** Host of the token service: {auth_url} for `current`, {legacy_api_url} for the proxies, {former_auth_url} for the former provider. */
  baseUrl: string;
  clientId: string;
  /** `code` (the default) or `token` (implicit flow); the proxies only know `code`. */
  responseType?: 'code' | 'token';
  /** Required by `current` and `former-provider`. */
  redirectUri?: string;
  /** Ignored by the proxies. */
  scope?: string | readonly string[];
  /** Echoed back in the redirect; check it there (request forgery). */
  state?: string;
  variant?: TokenServiceVariant;
  /** PKCE S256 challenge (pkce.ts). */
  codeChallenge?: string;
}

/** The URL of the browser authorize page; `encodeURIComponent` writes spaces as `%20`, as the document asks (not `+`). */
export function buildAuthorizeUrl(opts: AuthorizeUrlOptions): string {
  const variant = opts.variant ?? 'current';
  const responseType = opts.responseType ?? 'code';
  const scope = typeof opts.scope === 'string' ? opts.scope : opts.scope?.join(' ');
  const params: Array<[string, string | undefined]> = [];
  switch (variant) {
    case 'current':
    case 'former-provider':
      if (!opts.redirectUri) throw new TypeError(`the ${variant} authorize page needs a redirect_uri`);
      params.push(['response_type', responseType], ['client_id', opts.clientId], ['redirect_uri', opts.redirectUri]);
      params.push(['scope', scope], ['state', opts.state]);
      if (opts.codeChallenge) params.push(['code_challenge', opts.codeChallenge], ['code_challenge_method', 'S256']);
      break;
    case 'v2-proxy':
      if (responseType !== 'code') throw new TypeError('the v2 proxy only supports response_type=code');
      params.push(['response_type', 'code'], ['client_id', opts.clientId], ['state', opts.state], ['redirect_uri', opts.redirectUri]);
      if (opts.codeChallenge) params.push(['code_challenge', opts.codeChallenge], ['code_challenge_method', 'S256']);
      break;
    case 'oldest':
      if (responseType !== 'code') throw new TypeError('the oldest proxy only supports the authorization code flow');
      params.push(['client_id', opts.clientId], ['redirect_uri', opts.redirectUri], ['state', opts.state]);
      break;
  }
  const query = params
    .filter((p): p is [string, string] => p[1] !== undefined && p[1] !== '')
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&');
  return `${joinUrl(opts.baseUrl, VARIANT_ENDPOINTS[variant].authorizePath)}?${query}`;
}
