import { redact } from '../../util/redact.js';

/**
 * A record broke the Session schema. Outside the transport family on purpose: the request
 * worked, the data did not. Names the session id (or the record's index when the id itself is
 * missing) and the field path.
 */
export class RecordValidationError extends Error {
  override readonly name = 'RecordValidationError';
  readonly kind = 'validation';
  readonly retryable = false;
  constructor(
    readonly sessionId: string | undefined,
    readonly index: number,
    readonly path: string,
    readonly problem: string,
    /** The raw record as received, for quarantine. */
    readonly record: unknown,
  ) {
    super(
      redact(
        `invalid session record ${sessionId !== undefined ? `id ${JSON.stringify(sessionId)}` : `#${index} (no id)`}: ` +
          `field ${path || '(record)'} ${problem}`,
      ),
    );
  }
}
