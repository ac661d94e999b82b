import { redact } from '../../util/redact.js';

/**
 * Base of the reporting client's error family. `retryable` says whether the same request may
 * succeed if sent again; the retry loop asks this property, never the message.
 * Messages pass through `redact()`, so no registered secret (the API key) can leak through them.
 */
export abstract class ReportingError extends Error {
  abstract readonly retryable: boolean;
  /** A short machine-readable kind, also used in run summaries. */
  abstract readonly kind: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(redact(message), options);
  }
}

export function isReportingError(e: unknown): e is ReportingError {
  return e instanceof ReportingError;
}
