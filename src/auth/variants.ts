/** The token services (interface document, "Versioning"); only `current` is for new work, the others behind an option. */
export type TokenServiceVariant = 'current' | 'v2-proxy' | 'oldest' | 'former-provider';

export const TOKEN_SERVICE_VARIANTS: readonly TokenServiceVariant[] = ['current', 'v2-proxy', 'oldest', 'former-provider'];

/** Paths relative to the variant's host, and which host placeholder of the document that is. */
export const VARIANT_ENDPOINTS: Readonly<
  Record<TokenServiceVariant, { authorizePath: string; tokenPath: string; host: '{auth_url}' | '{legacy_api_url}' | '{former_auth_url}' }>
> = {
  current: { authorizePath: '/oauth/authorize', tokenPath: '/oauth/token', host: '{auth_url}' },
  'v2-proxy': { authorizePath: '/oauth/v2/authorize', tokenPath: '/oauth/v2/token', host: '{legacy_api_url}' },
  oldest: { authorizePath: '/oauth/authorize', tokenPath: '/oauth/access_token', host: '{legacy_api_url}' },
  'former-provider': { authorizePath: '/oauth2/v2/grant', tokenPath: '/oauth2/v2/token', host: '{former_auth_url}' },
};

/** `base` + `path`, keeping any path prefix of `base` (`https://h/x` + `/oauth/token` → `https://h/x/oauth/token`). */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
