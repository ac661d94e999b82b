export { getCurrentUser, accountKeysOf, type CurrentUser, type GetCurrentUserOptions } from './get-current-user.js';
export { IdentityError, isIdentityError } from './errors/identity-error.js';
