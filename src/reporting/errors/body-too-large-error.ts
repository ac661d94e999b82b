import { ReportingError } from './reporting-error.js';

/**
 * A body larger than `maxBodyBytes` (by Content-Length, or counted as it streams in: memory stays
 * bounded). Not retried as such: the pipeline splits the window, failing it only below the minimum chunk.
 */
export class BodyTooLargeError extends ReportingError {
  override readonly name = 'BodyTooLargeError';
  readonly kind = 'body-too-large';
  readonly retryable = false;
  constructor(
    readonly limitBytes: number,
    readonly declaredBytes?: number,
  ) {
    super(
      `the reporting endpoint sent a body larger than the limit of ${limitBytes} bytes (maxBodyBytes)` +
        (declaredBytes !== undefined ? `: Content-Length ${declaredBytes}` : ''),
    );
  }
}
