import { redact, redactDeep } from '../../util/redact.js';

/** A 2xx answer of the wrong shape. Outside the ControlError family on purpose: the request worked (a session may exist). */
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
