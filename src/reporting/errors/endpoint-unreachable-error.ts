import { ExitCode } from '../../errors.js';
import { displayUrl } from '../../util/display-url.js';
import { ReportingError } from './reporting-error.js';

/** Where the endpoint's address is set, when the caller does not say (the single-account settings). */
export const DEFAULT_URL_SOURCE = 'REPORTING_URL (or reportingUrl in the configuration)';

/**
 * A client's first connection was refused, or its port is one fetch never connects to: nothing has
 * answered at that address, so it is a wrong setting, not an outage. Not retried; exit 2. A refusal
 * after the endpoint has answered once (a restart mid-run) stays a TransientError.
 */
export class EndpointUnreachableError extends ReportingError {
  override readonly name = 'EndpointUnreachableError';
  readonly kind = 'unreachable';
  readonly retryable = false;
  override readonly needsSettingFixed = true;
  readonly exitCode = ExitCode.usage;
  constructor(url: string, reason: string, urlSource: string = DEFAULT_URL_SOURCE, options?: { cause?: unknown }) {
    super(
      `cannot connect to the reporting endpoint ${displayUrl(url)}: ${reason}; nothing has answered at that address in this run, ` +
        `so it is not retried: check ${urlSource}`,
      options,
    );
  }
}
