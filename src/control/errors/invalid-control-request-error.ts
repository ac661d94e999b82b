/** The request was not sent: it breaks the document's rules (sessionType outside 0 to 4, say). Not retryable. */
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
