export { ControlError, isControlError } from './control-error.js';
export { ControlHttpError } from './control-http-error.js';
export { ControlNetworkError } from './control-network-error.js';
export { InvalidControlResponseError } from './invalid-control-response-error.js';
export { InvalidControlRequestError } from './invalid-control-request-error.js';
