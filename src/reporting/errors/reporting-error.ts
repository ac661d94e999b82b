import { redact } from '../../util/redact.js';

/** Base of the reporting client's errors: the retry loop asks `retryable`, never the message; messages are redacted. */
export abstract class ReportingError extends Error {
  abstract readonly retryable: boolean;
  /** Also used in run summaries. */
  abstract readonly kind: string;
  /** The request will fail the same way until a setting is fixed (the key, the URL): retrying later will not help. */
  readonly needsSettingFixed: boolean = false;
  /** Attempts made before the client gave up with this error. */
  attempts?: number;
  constructor(message: string, options?: { cause?: unknown }) {
    super(redact(message), options);
  }
}

export function isReportingError(e: unknown): e is ReportingError {
  return e instanceof ReportingError;
}

/** Whether `err` or an error in its cause chain says a setting must be fixed before anything can succeed. */
export function needsSettingFixed(err: unknown): boolean {
  for (let cur = err, depth = 0; cur instanceof Error && depth < 8; cur = cur.cause, depth++) {
    if (cur instanceof ReportingError && cur.needsSettingFixed) return true;
  }
  return false;
}
