import { ReportingError } from './reporting-error.js';

export type TransientKind = 'server-error' | 'network' | 'timeout' | 'incomplete-body';

/** A failure that may pass: 5xx, connection reset, timeout, a body that is not complete JSON. Retried. */
export class TransientError extends ReportingError {
  override readonly name = 'TransientError';
  readonly retryable = true;
  constructor(
    readonly kind: TransientKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
