import type { StoredTokens } from './stored-tokens.js';

/** Where tokens live between runs. */
export interface TokenStore {
  load(): Promise<StoredTokens | undefined>;
  save(tokens: StoredTokens): Promise<void>;
  clear(): Promise<void>;
  /**
   * Runs `fn` while holding the store's lock, so that two processes do not refresh at the same
   * time (each refresh may invalidate the other's refresh token). Optional: in-memory stores need none.
   */
  withLock?<T>(fn: () => Promise<T>): Promise<T>;
  /** Where the tokens are, for messages (never their values). */
  readonly description: string;
}

/** Keeps tokens in memory only: for library callers that persist tokens themselves, and for tests. */
export class MemoryTokenStore implements TokenStore {
  readonly description: string = 'memory';
  constructor(private tokens?: StoredTokens) {}
  async load(): Promise<StoredTokens | undefined> {
    return this.tokens && { ...this.tokens };
  }
  async save(tokens: StoredTokens): Promise<void> {
    this.tokens = { ...tokens };
  }
  async clear(): Promise<void> {
    this.tokens = undefined;
  }
}
