import { describeRedirect, isRedirect } from '../util/display-url.js';
import { registerSecret } from '../util/redact.js';
import { AuthNetworkError } from './errors/auth-network-error.js';
import { SignInRequiredError } from './errors/sign-in-required-error.js';
import { TokenRequestError, oauthErrorOf } from './errors/token-request-error.js';
import { describeNetworkError, parseBody, type FetchLike } from './http.js';
import { normalizeTokenResponse, type TokenResponse } from './token-response.js';
import { joinUrl, VARIANT_ENDPOINTS, type TokenServiceVariant } from './variants.js';

export interface TokenClientOptions {
  /** {auth_url} for `current` (e.g. https://auth.example.com). */
  baseUrl: string;
  clientId: string;
  /** Sent in the Basic header; not used by the oldest variant. */
  clientSecret?: string;
  variant?: TokenServiceVariant;
  fetch?: FetchLike;
  /** 30 s by default. */
  timeoutMs?: number;
  /** Default: `process.emitWarning(..., 'DeprecationWarning')`. */
  warn?: (message: string) => void;
}

export const PASSWORD_GRANT_WARNING =
  'the password grant is deprecated: it has no multifactor step and no scope consent, and new clients cannot use it ' +
  '(existing clients with it enabled keep working). Use the authorization code flow (`session-etl auth login`).';

/**
 * Client of the token endpoint: client credentials in the Basic header, grant parameters in a form body, every
 * answer normalised to one `TokenResponse`. The oldest proxy takes client_id in the form, no secret, and `user_id`.
 */
export class TokenClient {
  readonly variant: TokenServiceVariant;
  readonly baseUrl: string;
  readonly clientId: string;
  readonly tokenUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly timeoutMs: number;
  private readonly warn: (message: string) => void;

  constructor(private readonly opts: TokenClientOptions) {
    this.variant = opts.variant ?? 'current';
    this.baseUrl = opts.baseUrl;
    this.clientId = opts.clientId;
    this.tokenUrl = joinUrl(opts.baseUrl, VARIANT_ENDPOINTS[this.variant].tokenPath);
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.warn = opts.warn ?? ((m) => process.emitWarning(m, { type: 'DeprecationWarning', code: 'SESSION_ETL_PASSWORD_GRANT' }));
    registerSecret(opts.clientSecret);
    if (opts.clientSecret !== undefined) registerSecret(this.basicCredentials());
  }

  /** `redirectUri`: exactly when one was given at authorize, the same value. `codeVerifier`: with a PKCE challenge. */
  async exchangeCode(code: string, redirectUri?: string, codeVerifier?: string): Promise<TokenResponse> {
    registerSecret(code);
    registerSecret(codeVerifier);
    const form: Record<string, string> = { grant_type: 'authorization_code', code };
    if (redirectUri !== undefined) form.redirect_uri = redirectUri;
    if (codeVerifier !== undefined) form.code_verifier = codeVerifier;
    return this.request(form, 'authorization code');
  }

  /** The answer has `refresh_token` only when a new one was issued. Throws `SignInRequiredError` when only a sign-in helps. */
  async refresh(refreshToken: string): Promise<TokenResponse> {
    registerSecret(refreshToken);
    try {
      return await this.request({ grant_type: 'refresh_token', refresh_token: refreshToken }, 'refresh token');
    } catch (err) {
      throw refreshFailure(err);
    }
  }

  /** The deprecated password grant: PASSWORD_GRANT_WARNING on every call. */
  async passwordGrant(username: string, password: string): Promise<TokenResponse> {
    registerSecret(password);
    this.warn(PASSWORD_GRANT_WARNING);
    const userField = this.variant === 'oldest' ? 'user_id' : 'username';
    return this.request({ grant_type: 'password', [userField]: username, password }, 'password grant');
  }

  private basicCredentials(): string {
    return Buffer.from(`${this.opts.clientId}:${this.opts.clientSecret ?? ''}`, 'utf8').toString('base64');
  }

  private async request(form: Record<string, string>, what: string): Promise<TokenResponse> {
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    const body = new URLSearchParams(form);
    if (this.variant === 'oldest') body.set('client_id', this.opts.clientId);
    else headers.authorization = `Basic ${this.basicCredentials()}`;

    let res: Response;
    let text: string;
    try {
      res = await this.fetchImpl(this.tokenUrl, {
        method: 'POST',
        headers,
        body: body.toString(),
        // Never follow a redirect: the client secret and the code or refresh token are in this request.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      throw new AuthNetworkError(`the token service at ${this.tokenUrl} could not be reached: ${describeNetworkError(err)}`, err);
    }
    const parsed = parseBody(text);
    if (isRedirect(res.status)) {
      const where = describeRedirect(res.status, res.headers.get('location'), this.tokenUrl);
      throw new TokenRequestError(res.status, `${where}; redirects are not followed (the credentials would go with them): set AUTH_URL to the token service's own address`, what);
    }
    if (!res.ok) throw new TokenRequestError(res.status, parsed, what);
    return normalizeTokenResponse(parsed, this.variant);
  }
}

/** Maps the refresh grant's refusals that mean "sign in again" to `SignInRequiredError`. */
function refreshFailure(err: unknown): unknown {
  if (!(err instanceof TokenRequestError)) return err;
  const { error, description } = oauthErrorOf(err.body);
  const details = { status: err.status, body: err.body, cause: err };
  if (err.status === 400 && error === 'invalid_request' && description === 'unsupported.jwt') {
    return new SignInRequiredError('former-provider-token', details);
  }
  // RFC 6749 section 5.2: an expired, revoked or replaced refresh token is `invalid_grant`.
  if ((err.status === 400 || err.status === 401) && error === 'invalid_grant') return new SignInRequiredError('refresh-token-invalid', details);
  return err;
}
