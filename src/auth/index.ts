export { buildAuthorizeUrl, type AuthorizeUrlOptions } from './authorize-url.js';
export { parseCodeRedirect, parseImplicitRedirect, type AuthorizationCode } from './redirect.js';
export { createPkcePair, pkceChallenge, type PkcePair } from './pkce.js';
export { normalizeTokenResponse, type TokenResponse, type LegacyUserFields } from './token-response.js';
export { TokenClient, PASSWORD_GRANT_WARNING, type TokenClientOptions } from './token-client.js';
export { TokenManager, type TokenManagerOptions } from './token-manager.js';
export { MemoryTokenStore, type TokenStore } from './token-store.js';
export { FileTokenStore, defaultTokenFile } from './file-token-store.js';
export {
  applyTokenResponse,
  summarizeTokens,
  splitScopes,
  DEFAULT_EXPIRES_IN_SECONDS,
  type StoredTokens,
  type TokenSummary,
} from './stored-tokens.js';
export { loginWithLoopback, SESSION_CONTROL_SCOPE, type LoopbackLoginOptions, type LoopbackLoginResult } from './loopback-login.js';
export {
  loadInterfaceConfig,
  InterfaceConfigSchema,
  InterfaceConfigError,
  INTERFACE_ENV,
  type InterfaceConfig,
} from './interface-config.js';
export { TOKEN_SERVICE_VARIANTS, VARIANT_ENDPOINTS, type TokenServiceVariant } from './variants.js';
export type { FetchLike } from './http.js';
export * from './errors/index.js';
export { createTokenSetup, type InterfaceRuntime, type TokenSetup } from './from-config.js';
