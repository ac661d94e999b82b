/**
 * The request was not sent because it breaks the document's rules (sessionType outside 0 to 4, a
 * sessionId that is not a UUID, a webhook whose targetUrl is not a URL...). Not retryable.
 */
export class InvalidControlRequestError extends Error {
  override readonly name = 'InvalidControlRequestError';
  readonly retryable = false;
  constructor(
    message: string,
    readonly issues: string[],
  ) {
    super(message);
  }
}
