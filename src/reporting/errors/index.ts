export { ReportingError, isReportingError } from './reporting-error.js';
export { AuthenticationError } from './authentication-error.js';
export { RateLimitedError } from './rate-limited-error.js';
export { TransientError, type TransientKind } from './transient-error.js';
export { HttpStatusError } from './http-status-error.js';
export { GraphQLResponseError, type GraphQLErrorEntry } from './graphql-response-error.js';
export { InvalidResponseError } from './invalid-response-error.js';
export { RecordValidationError } from './record-validation-error.js';
