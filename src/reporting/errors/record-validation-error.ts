import { redact } from '../../util/redact.js';

/**
 * A record broke the Session schema. Outside the transport family on purpose: the request worked,
 * the data did not. Names the session id (or the record's index) and the field path.
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

/** The record's id when it is a string. */
export function sessionIdOf(raw: unknown): string | undefined {
  const id = (raw as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : undefined;
}
