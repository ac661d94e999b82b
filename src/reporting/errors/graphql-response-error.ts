import { redactDeep } from '../../util/redact.js';
import { ReportingError } from './reporting-error.js';

export interface GraphQLErrorEntry {
  message: string;
  [k: string]: unknown;
}

/**
 * HTTP 200 with an `errors` array. A response holding both `data` and `errors` is a failure too:
 * its partial data is kept here for diagnosis but never accepted as a result.
 * Not retried as such: the pipeline splits the window instead (the server may refuse a window
 * that is too wide or holds too many records).
 */
export class GraphQLResponseError extends ReportingError {
  override readonly name = 'GraphQLResponseError';
  readonly kind = 'graphql';
  readonly retryable = false;
  readonly errors: GraphQLErrorEntry[];
  /** Partial data that came with the errors; never used as a result. */
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
