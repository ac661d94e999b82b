import { redact, redactDeep } from '../../util/redact.js';

/**
 * A 2xx answer whose body is not what the document describes (e.g. agentUrl is not a string).
 * Outside the ControlError family on purpose: the request worked (a session may exist), the data did not.
 */
export class InvalidControlResponseError extends Error {
  override readonly name = 'InvalidControlResponseError';
  readonly retryable = false;
  readonly body: unknown;
  constructor(
    message: string,
    readonly status: number,
    body: unknown,
    readonly issues: string[],
  ) {
    super(redact(message));
    this.body = redactDeep(body);
  }
}
