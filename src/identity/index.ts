export { getCurrentUser, accountKeysOf, type CurrentUser, type GetCurrentUserOptions } from './getCurrentUser.js';
export { IdentityError, isIdentityError } from './errors/IdentityError.js';
