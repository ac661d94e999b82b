import { redact } from '../../util/redact.js';
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

  /** A body that is not complete JSON (the parser's message, redacted, is the cause). */
  static incompleteBody(err: Error): TransientError {
    return new TransientError('incomplete-body', 'the reporting endpoint sent a body that is not complete JSON', undefined, {
      cause: new Error(redact(err.message)),
    });
  }
}
