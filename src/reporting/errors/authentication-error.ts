import { ReportingError } from './reporting-error.js';

/** HTTP 401 or 403: the key was refused. Never retried. The advice names `keySource` when the caller knows it. */
export class AuthenticationError extends ReportingError {
  override readonly name = 'AuthenticationError';
  readonly kind = 'authentication';
  readonly retryable = false;
  override readonly needsSettingFixed = true;
  constructor(readonly status: number, keySource?: string) {
    super(
      `the reporting endpoint refused the API key (HTTP ${status}): check ` +
        (keySource ?? "REPORTING_API_KEY (or REPORTING_API_KEY_FILE; with an accounts map, the account's apiKeyFile or apiKeyEnv)") +
        ': it must be a reporting-kind key, sent as the whole Authorization header, and not revoked',
    );
  }
}
