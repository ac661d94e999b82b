import { ReportingError } from './reporting-error.js';

/**
 * The body of an answer is larger than `maxBodyBytes` (Content-Length, or counted while it
 * streams in: reading stops there, so memory stays bounded). Not retried as such: like an answer
 * that may be capped, the pipeline splits the window (a shorter window gives a smaller body) and
 * fails it only below the minimum chunk.
 */
export class BodyTooLargeError extends ReportingError {
  override readonly name = 'BodyTooLargeError';
  readonly kind = 'body-too-large';
  readonly retryable = false;
  constructor(
    readonly limitBytes: number,
    /** Content-Length when the server sent one. */
    readonly declaredBytes?: number,
  ) {
    super(
      `the reporting endpoint sent a body larger than the limit of ${limitBytes} bytes (maxBodyBytes)` +
        (declaredBytes !== undefined ? `: Content-Length ${declaredBytes}` : ''),
    );
  }
}
