export { ControlError, isControlError } from './ControlError.js';
export { ControlHttpError } from './ControlHttpError.js';
export { ControlNetworkError } from './ControlNetworkError.js';
export { InvalidControlResponseError } from './InvalidControlResponseError.js';
export { InvalidControlRequestError } from './InvalidControlRequestError.js';
