export { ReportingError, isReportingError } from './ReportingError.js';
export { AuthenticationError } from './AuthenticationError.js';
export { RateLimitedError } from './RateLimitedError.js';
export { TransientError, type TransientKind } from './TransientError.js';
export { HttpStatusError } from './HttpStatusError.js';
export { GraphQLResponseError, type GraphQLErrorEntry } from './GraphQLResponseError.js';
export { InvalidResponseError } from './InvalidResponseError.js';
export { RecordValidationError } from './RecordValidationError.js';
export { RedirectError } from './RedirectError.js';
