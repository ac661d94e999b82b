export { AuthError, isAuthError } from './auth-error.js';
export { TokenRequestError, oauthErrorOf } from './token-request-error.js';
export { SignInRequiredError, isSignInRequiredError, type SignInReason } from './sign-in-required-error.js';
export { AuthNetworkError } from './auth-network-error.js';
export { AuthorizationResponseError } from './authorization-response-error.js';
export { InvalidTokenResponseError } from './invalid-token-response-error.js';
