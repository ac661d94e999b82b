/**
 * `session-etl auth login | status | logout`: sign in to the token service with the authorization
 * code flow (loopback redirect), show what is stored (never a token value), forget it.
 */
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { FileTokenStore } from '../../auth/file-token-store.js';
import { createTokenSetup, type InterfaceRuntime } from '../../auth/from-config.js';
import { InterfaceConfigError, loadInterfaceConfig, type InterfaceConfig } from '../../auth/interface-config.js';
import { loadConfig as loadMainConfig } from '../../config/load.js';
import { loginWithLoopback, SESSION_CONTROL_SCOPE } from '../../auth/loopback-login.js';
import type { StoredTokens, TokenSummary } from '../../auth/stored-tokens.js';
import { summarizeTokens } from '../../auth/stored-tokens.js';
import { redact } from '../../util/redact.js';
import { asUsage, UsageError } from '../usage-error.js';

/** What the interface commands read and write; tests substitute them. */
export interface InterfaceCommandDeps extends InterfaceRuntime {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Opens a URL in the person's browser; resolves false when no browser could be started. */
  openBrowser: (url: string) => Promise<boolean>;
  /** Values from a configuration object, below the environment. */
  config?: Partial<InterfaceConfig>;
}

export function defaultDeps(): InterfaceCommandDeps {
  return {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    openBrowser,
    // The configuration file (SESSION_ETL_CONFIG) may name the hosts, client id and token file;
    // the environment still wins. Read lazily, so that --help never depends on it.
    get config() {
      const c = loadMainConfig().config;
      return Object.fromEntries(
        Object.entries({ authUrl: c.authUrl, apiUrl: c.apiUrl, consoleUrl: c.consoleUrl, clientId: c.oauthClientId, tokenFile: c.tokenFile })
          .filter(([, v]) => v != null),
      ) as Partial<InterfaceConfig>;
    },
  };
}

/** Loads the settings the command needs; a missing or bad one is a usage error (exit 2). */
export function loadConfig(deps: InterfaceCommandDeps, require: ReadonlyArray<keyof InterfaceConfig>): InterfaceConfig {
  return asUsage(
    () => loadInterfaceConfig({ env: deps.env, ...(deps.config ? { config: deps.config } : {}), require }),
    (err) => err instanceof InterfaceConfigError,
  );
}

/** Writes a line, passed through redact() first. */
export function println(stream: NodeJS.WritableStream, text = ''): void {
  stream.write(redact(text) + '\n');
}

export const TOKEN_SETTINGS = ['authUrl', 'clientId', 'clientSecret'] as const;

export function register(program: Command, deps: InterfaceCommandDeps = defaultDeps()): void {
  const auth = program.command('auth').description('Sign in to the token service (OAuth 2.0) for the session control and identity calls.');

  auth
    .command('login')
    .description('Sign in with the authorization code flow: authorize in a browser, receive the code on a loopback address, store the tokens.')
    .option('--no-browser', 'print the authorize URL instead of opening a browser')
    .option('--redirect-port <port>', 'port of the loopback redirect listener (default: any free port)', parsePort)
    .option('--scope <scopes>', 'scopes to ask for, separated by spaces', SESSION_CONTROL_SCOPE)
    .option('--timeout <seconds>', 'give up after this many seconds without an answer', parsePositive, 300)
    .action(async (opts: { browser: boolean; redirectPort?: number; scope: string; timeout: number }) => {
      const config = loadConfig(deps, TOKEN_SETTINGS);
      const { client, manager, store } = createTokenSetup(config, deps);
      const { tokens } = await loginWithLoopback({
        client,
        scope: opts.scope,
        ...(opts.redirectPort !== undefined ? { redirectPort: opts.redirectPort } : {}),
        timeoutMs: opts.timeout * 1000,
        openUrl: async (url) => {
          if (opts.browser && (await deps.openBrowser(url))) {
            println(deps.stderr, 'Opened the sign-in page in your browser. If it did not open, visit:');
          } else {
            println(deps.stderr, 'Open this URL in a browser to sign in:');
          }
          println(deps.stdout, url);
          println(deps.stderr, 'Waiting for the sign-in to finish…');
        },
      });
      const stored = await manager.storeLogin(tokens);
      const summary = summarizeTokens(stored, (deps.now ?? Date.now)());
      println(deps.stdout, `Signed in${summary.principal ? ` as ${summary.principal}` : ''}.`);
      printSummary(deps.stdout, summary, store.path, await store.mode());
    });

  auth
    .command('status')
    .description('Show who is signed in, the scopes and when the access token expires (never the tokens).')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig(deps, []);
      const file = new FileTokenStore(config.tokenFile);
      const tokens = await file.load();
      const mode = await file.mode();
      if (!tokens) {
        if (opts.json) println(deps.stdout, JSON.stringify({ signedIn: false, tokenFile: file.path }));
        else println(deps.stdout, `Not signed in (no tokens in ${file.path}). Run \`session-etl auth login\`.`);
        return;
      }
      const summary = summarizeTokens(tokens, (deps.now ?? Date.now)());
      const mismatch = mismatchOf(tokens, config);
      if (opts.json) {
        println(deps.stdout, JSON.stringify({ signedIn: true, ...summary, tokenFile: file.path, tokenFileMode: modeText(mode), configMismatch: mismatch }, null, 2));
        return;
      }
      println(deps.stdout, `Signed in${summary.principal ? ` as ${summary.principal}` : ''}.`);
      printSummary(deps.stdout, summary, file.path, mode);
      if (mismatch) println(deps.stdout, `Note: ${mismatch}; run \`session-etl auth login\` to sign in to the configured one.`);
    });

  auth
    .command('logout')
    .description('Forget the stored tokens (deletes the token file).')
    .action(async () => {
      const config = loadConfig(deps, []);
      const store = new FileTokenStore(config.tokenFile);
      const had = (await store.load()) !== undefined || (await store.mode()) !== undefined;
      await store.clear();
      println(deps.stdout, had ? `Signed out: removed ${store.path}.` : `Not signed in (no tokens in ${store.path}).`);
    });
}

function printSummary(out: NodeJS.WritableStream, s: TokenSummary, path: string, mode?: number): void {
  println(out, `  token service: ${s.authUrl} (client ${s.clientId}${s.variant === 'current' ? '' : `, ${s.variant}`})`);
  println(out, `  scopes:        ${s.scopes.length > 0 ? s.scopes.join(' ') : '(none)'}`);
  println(out, `  access token:  ${s.expired ? `expired ${ago(-s.expiresInSeconds)} ago` : `valid for ${ago(s.expiresInSeconds)}`} (expires ${s.expiresAt})`);
  println(out, `  refresh token: ${s.hasRefreshToken ? 'present (used automatically when the access token expires)' : 'none'}`);
  println(out, `  stored in:     ${path}${mode !== undefined ? ` (mode ${modeText(mode)}${mode !== 0o600 ? ', expected 0600!' : ''})` : ''}`);
}

function mismatchOf(t: StoredTokens, c: InterfaceConfig): string | null {
  const trim = (u: string) => u.replace(/\/+$/, '');
  if (c.authUrl && trim(c.authUrl) !== trim(t.authUrl)) return `the tokens were issued by ${t.authUrl}, but AUTH_URL is ${c.authUrl}`;
  if (c.clientId && c.clientId !== t.clientId) return `the tokens were issued to client ${t.clientId}, but OAUTH_CLIENT_ID is ${c.clientId}`;
  return null;
}

function modeText(mode: number | undefined): string | null {
  return mode === undefined ? null : `0${mode.toString(8)}`;
}

function ago(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} days`;
}

function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--redirect-port must be a port number (0 to 65535), not ${JSON.stringify(v)}`);
  return n;
}

function parsePositive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`expected a positive number, not ${JSON.stringify(v)}`);
  return n;
}

/** Starts the platform's URL opener (xdg-open, open, start); false when none could be started. */
export function openBrowser(url: string): Promise<boolean> {
  const [cmd, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]];
  return new Promise((resolve) => {
    try {
      const child = spawn(cmd, args as string[], { stdio: 'ignore', detached: true });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}
