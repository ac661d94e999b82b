/**
 * The rest of the vendor interface, emulated: the token service (current and superseded variants),
 * the identity lookup and the session control endpoints. The reporting emulator hands it every
 * request whose path starts with /oauth, /identity or /api/. See docs/interface.md.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { handleAuthorize } from './authorize.js';
import { handleIdentity } from './identity.js';
import { handleSessionControl } from './session-control.js';
import { stateFor, type InterfaceEmulatorOptions } from './state.js';
import { handleToken, TOKEN_PATHS } from './token-endpoint.js';

export { inspectInterfaceEmulator, interfaceEmulatorEnv, type InterfaceEmulatorOptions, type InterfaceState } from './state.js';

export interface InterfaceContext {
  /** The emulator's current time, in epoch seconds. */
  now(): number;
  /** `EmulatorOptions.interface` (an InterfaceEmulatorOptions), passed through untouched. */
  options?: unknown;
}

const AUTHORIZE_PATHS = new Set(['/oauth/authorize', '/oauth/v2/authorize', '/oauth2/v2/grant']);
const fallbackKey = {};

/** Answers the request and returns true, or returns false to let the emulator answer 404. */
export async function handleInterfaceRequest(req: IncomingMessage, res: ServerResponse, ctx: InterfaceContext): Promise<boolean> {
  const url = new URL(req.url ?? '/', 'http://emulator.invalid');
  const path = url.pathname;
  // This emulator instance's state: keyed by the options object, else by the HTTP server.
  const options = ctx.options && typeof ctx.options === 'object' ? (ctx.options as InterfaceEmulatorOptions) : undefined;
  const state = stateFor(options ?? (req.socket as { server?: object } | null)?.server ?? fallbackKey, options);
  const now = ctx.now();

  if (AUTHORIZE_PATHS.has(path)) {
    if (req.method !== 'GET') return false;
    handleAuthorize(res, url, state, now);
  } else if (TOKEN_PATHS[path] !== undefined) {
    await handleToken(req, res, url, state, now);
  } else if (path === '/identity/v1/Users/me') {
    handleIdentity(req, res, state, now);
  } else {
    return path.startsWith('/api/') && handleSessionControl(req, res, url, state, now);
  }
  return true;
}
