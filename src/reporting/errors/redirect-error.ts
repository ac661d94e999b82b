import { describeRedirect, displayUrl } from '../../util/display-url.js';
import { ReportingError } from './reporting-error.js';

/**
 * HTTP 3xx, never followed: the API key would go along, and whatever answers there (an empty list,
 * say) would be taken for the endpoint's answer. Not retried.
 */
export class RedirectError extends ReportingError {
  override readonly name = 'RedirectError';
  readonly kind = 'redirect';
  readonly retryable = false;
  override readonly needsSettingFixed = true;
  /** Without credentials or query. */
  readonly location: string | undefined;
  constructor(
    readonly status: number,
    location: string | undefined,
    url: string,
  ) {
    super(
      `the reporting endpoint answered ${describeRedirect(status, location ?? null, url)}; redirects are not followed ` +
        '(the API key would go with them): set REPORTING_URL to the address the endpoint answers at itself',
    );
    this.location = location === undefined ? undefined : displayUrl(location, { base: url });
  }
}
