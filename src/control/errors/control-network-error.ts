import { ControlError } from './control-error.js';

/** The console could not be reached or did not answer in time. Retryable; the original is the `cause`. */
export class ControlNetworkError extends ControlError {
  override readonly name = 'ControlNetworkError';
  readonly kind = 'network';
  readonly retryable = true;
  constructor(message: string, cause: unknown) {
    super(message, { cause });
  }
}
