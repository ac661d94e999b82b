import { SignInRequiredError } from './errors/sign-in-required-error.js';
import { applyTokenResponse, summarizeTokens, type StoredTokens, type TokenSummary } from './stored-tokens.js';
import type { TokenClient } from './token-client.js';
import type { TokenResponse } from './token-response.js';
import type { TokenStore } from './token-store.js';

export interface TokenManagerOptions {
  client: TokenClient;
  store: TokenStore;
  now?: () => number;
  /** Refresh when the access token has fewer seconds left than this; 60 by default. */
  refreshBeforeExpirySeconds?: number;
}

/**
 * Hands out a valid access token, refreshing it when needed; a new refresh token is stored at once (it invalidates
 * the old one). Refreshes are single-flight, because two racing could each invalidate the refresh token the other is
 * about to use; across processes through the store's lock (a process finding them refreshed uses them).
 */
export class TokenManager {
  private readonly now: () => number;
  private readonly skewMs: number;
  private inflight: Promise<StoredTokens> | undefined;

  constructor(private readonly opts: TokenManagerOptions) {
    this.now = opts.now ?? Date.now;
    this.skewMs = (opts.refreshBeforeExpirySeconds ?? 60) * 1000;
  }

  /** Throws `SignInRequiredError` when only a new sign-in can help. */
  async getAccessToken(): Promise<string> {
    return (await this.getTokens()).accessToken;
  }

  async getTokens(): Promise<StoredTokens> {
    const tokens = await this.loadOwn();
    if (this.isFresh(tokens)) return tokens;
    return this.refresh(tokens);
  }

  /** Refreshes now (or joins the one in flight); newer tokens than `seen` found under the lock are used instead. */
  refresh(seen?: StoredTokens): Promise<StoredTokens> {
    this.inflight ??= this.runRefresh(seen).finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** Stores the tokens of a sign-in, replacing whatever was stored. */
  async storeLogin(res: TokenResponse): Promise<StoredTokens> {
    const tokens = applyTokenResponse(undefined, res, this.context());
    await this.opts.store.save(tokens);
    return tokens;
  }

  async status(): Promise<TokenSummary | undefined> {
    const tokens = await this.opts.store.load();
    return tokens && summarizeTokens(tokens, this.now());
  }

  /** The document names no revocation endpoint. */
  async logout(): Promise<void> {
    await this.opts.store.clear();
  }

  private async runRefresh(seen: StoredTokens | undefined): Promise<StoredTokens> {
    const run = async (): Promise<StoredTokens> => {
      const latest = await this.loadOwn();
      if (seen && latest.accessToken !== seen.accessToken && this.isFresh(latest)) return latest;
      if (latest.refreshToken === undefined) throw new SignInRequiredError('no-refresh-token');
      const res = await this.opts.client.refresh(latest.refreshToken);
      const next = applyTokenResponse(latest, res, this.context());
      await this.opts.store.save(next);
      return next;
    };
    return this.opts.store.withLock ? this.opts.store.withLock(run) : run();
  }

  private async loadOwn(): Promise<StoredTokens> {
    const tokens = await this.opts.store.load();
    if (!tokens) throw new SignInRequiredError('not-signed-in');
    if (trimSlash(tokens.authUrl) !== trimSlash(this.opts.client.baseUrl) || tokens.clientId !== this.opts.client.clientId) {
      throw new SignInRequiredError('other-service');
    }
    return tokens;
  }

  /** Fresh: more than the refresh margin left (at most half the token's lifetime, so short-lived tokens are not refreshed on every call). */
  private isFresh(t: StoredTokens): boolean {
    const margin = Math.min(this.skewMs, Math.max(0, (t.expiresAt - t.obtainedAt) / 2));
    return t.expiresAt - margin > this.now();
  }

  private context() {
    return { authUrl: this.opts.client.baseUrl, clientId: this.opts.client.clientId, now: this.now() };
  }
}

function trimSlash(u: string): string {
  return u.replace(/\/+$/, '');
}
