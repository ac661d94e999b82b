import { startEmulator } from '../../src/emulator/index.js';
import type { Emulator } from '../../src/emulator/options.js';
import { inspectInterfaceEmulator, type InterfaceEmulatorOptions } from '../../src/emulator/interface/index.js';
import { buildAuthorizeUrl } from '../../src/auth/authorize-url.js';
import { parseCodeRedirect } from '../../src/auth/redirect.js';
import { TokenClient } from '../../src/auth/token-client.js';
import type { TokenServiceVariant } from '../../src/auth/variants.js';
import type { TokenResponse } from '../../src/auth/token-response.js';

/** 2026-03-01T00:00:00Z, in epoch seconds: the emulator's pinned "now" at start. */
export const T0 = Date.UTC(2026, 2, 1) / 1000;

export const CLIENT_ID = 'test-client';
export const CLIENT_SECRET = 'test-client-secret-5d1c8c79';

export interface TestEmulator {
  emu: Emulator;
  /** Base URL without the trailing slash: {auth_url}, {api_url} and {base_url} at once. */
  base: string;
  options: InterfaceEmulatorOptions;
  /** Epoch milliseconds, shared by the emulator and the clients under test. */
  now: () => number;
  /** Moves the shared clock forward. */
  advance(seconds: number): void;
  /** The emulator's interface state (counters, issued tokens, sessions). */
  state(): NonNullable<ReturnType<typeof inspectInterfaceEmulator>>;
  client(variant?: TokenServiceVariant): TokenClient;
  close(): Promise<void>;
}

/** The whole emulator (reporting and interface) on port 0, with a pinned clock the test moves. */
export async function startTestEmulator(overrides: InterfaceEmulatorOptions = {}): Promise<TestEmulator> {
  const options: InterfaceEmulatorOptions = { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, ...overrides };
  let nowSeconds = T0;
  const emu = await startEmulator({ now: T0, sessionsPerDay: 0, interface: options });
  const base = emu.url.replace(/\/+$/, '');
  return {
    emu,
    base,
    options,
    now: () => nowSeconds * 1000,
    advance(seconds) {
      nowSeconds += seconds;
      emu.setNow(nowSeconds);
    },
    state() {
      const s = inspectInterfaceEmulator(options);
      if (!s) throw new Error('the emulator has not answered an interface request yet');
      return s;
    },
    client: (variant = 'current') => new TokenClient({ baseUrl: base, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, variant, warn: () => {} }),
    close: () => emu.close(),
  };
}

/**
 * Plays the browser: asks the authorize page (which auto-approves) and returns where it redirects.
 */
export async function authorizeRedirect(authorizeUrl: string): Promise<string> {
  const res = await fetch(authorizeUrl, { redirect: 'manual' });
  const location = res.headers.get('location');
  if (res.status !== 302 || !location) throw new Error(`authorize answered ${res.status}: ${await res.text()}`);
  return location;
}

/** The authorization code flow without a listener: authorize, read the code from the redirect, exchange it. */
export async function signIn(
  t: TestEmulator,
  opts: { variant?: TokenServiceVariant; scope?: string; redirectUri?: string } = {},
): Promise<TokenResponse> {
  const client = t.client(opts.variant);
  const redirectUri = opts.redirectUri ?? 'http://127.0.0.1:9/callback';
  const url = buildAuthorizeUrl({
    baseUrl: t.base,
    clientId: CLIENT_ID,
    redirectUri,
    scope: opts.scope ?? 'remoteview;settings',
    state: 'st-1',
    variant: opts.variant ?? 'current',
  });
  const { code } = parseCodeRedirect(await authorizeRedirect(url), 'st-1');
  return client.exchangeCode(code, redirectUri);
}
