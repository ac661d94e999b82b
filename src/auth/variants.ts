/**
 * The token services, in order of succession (see the interface document, "Versioning"):
 * the oldest proxy, the v2 proxy, and the current token service; the former provider ran beside
 * them and reached end of life. Only `current` should be used for new work: the others are here
 * so that their answers can be read and their URLs built, each behind an explicit option.
 */
export type TokenServiceVariant = 'current' | 'v2-proxy' | 'oldest' | 'former-provider';

export const TOKEN_SERVICE_VARIANTS: readonly TokenServiceVariant[] = ['current', 'v2-proxy', 'oldest', 'former-provider'];

interface VariantEndpoints {
  /** Path of the browser authorize page, relative to the variant's host. */
  authorizePath: string;
  /** Path of the token endpoint, relative to the variant's host. */
  tokenPath: string;
  /** Which host placeholder of the document the base URL stands for. */
  host: '{auth_url}' | '{legacy_api_url}' | '{former_auth_url}';
}

export const VARIANT_ENDPOINTS: Readonly<Record<TokenServiceVariant, VariantEndpoints>> = {
  current: { authorizePath: '/oauth/authorize', tokenPath: '/oauth/token', host: '{auth_url}' },
  'v2-proxy': { authorizePath: '/oauth/v2/authorize', tokenPath: '/oauth/v2/token', host: '{legacy_api_url}' },
  oldest: { authorizePath: '/oauth/authorize', tokenPath: '/oauth/access_token', host: '{legacy_api_url}' },
  'former-provider': { authorizePath: '/oauth2/v2/grant', tokenPath: '/oauth2/v2/token', host: '{former_auth_url}' },
};

/** `base` + `path`, keeping any path prefix of `base` (`https://h/x` + `/oauth/token` → `https://h/x/oauth/token`). */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
