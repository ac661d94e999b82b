import { redactDeep } from '../../util/redact.js';
import { ReportingError } from './reporting-error.js';

export interface GraphQLErrorEntry {
  message: string;
  [k: string]: unknown;
}

/**
 * HTTP 200 with an `errors` array, with or without partial data (kept for diagnosis, never a result).
 * Not retried as such: the pipeline splits the window (the server may refuse one too wide).
 */
export class GraphQLResponseError extends ReportingError {
  override readonly name = 'GraphQLResponseError';
  readonly kind = 'graphql';
  readonly retryable = false;
  readonly errors: GraphQLErrorEntry[];
  readonly partialData: unknown;
  constructor(errors: GraphQLErrorEntry[], partialData: unknown) {
    const msgs = errors.map((e) => e.message).filter(Boolean);
    super(
      `the reporting endpoint answered with GraphQL errors${partialData != null ? ' (partial data rejected)' : ''}: ` +
        (msgs.length ? msgs.slice(0, 3).join('; ') : 'no message'),
    );
    this.errors = redactDeep(errors);
    this.partialData = partialData;
  }
}
