import { FileTokenStore } from './file-token-store.js';
import type { FetchLike } from './http.js';
import type { InterfaceConfig } from './interface-config.js';
import { TokenClient } from './token-client.js';
import { TokenManager } from './token-manager.js';

/** What callers (the CLI, tests) may substitute. */
export interface InterfaceRuntime {
  fetch?: FetchLike;
  /** Epoch milliseconds. */
  now?: () => number;
}

export interface TokenSetup {
  client: TokenClient;
  store: FileTokenStore;
  manager: TokenManager;
}

/** The token client, the file store and the manager for a loaded configuration (authUrl, clientId, clientSecret required). */
export function createTokenSetup(config: InterfaceConfig, rt: InterfaceRuntime = {}): TokenSetup {
  if (!config.authUrl || !config.clientId) throw new TypeError('createTokenSetup needs authUrl and clientId');
  const client = new TokenClient({
    baseUrl: config.authUrl,
    clientId: config.clientId,
    ...(config.clientSecret !== undefined ? { clientSecret: config.clientSecret } : {}),
    ...(rt.fetch ? { fetch: rt.fetch } : {}),
  });
  const store = new FileTokenStore(config.tokenFile);
  const manager = new TokenManager({ client, store, ...(rt.now ? { now: rt.now } : {}) });
  return { client, store, manager };
}
