export { AuthError, isAuthError } from './AuthError.js';
export { TokenRequestError, oauthErrorOf } from './TokenRequestError.js';
export { SignInRequiredError, isSignInRequiredError, type SignInReason } from './SignInRequiredError.js';
export { AuthNetworkError } from './AuthNetworkError.js';
export { AuthorizationResponseError } from './AuthorizationResponseError.js';
export { InvalidTokenResponseError } from './InvalidTokenResponseError.js';
