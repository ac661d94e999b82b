import { z } from 'zod';
import { registerSecret } from '../util/redact.js';
import { MAX_SECRET_TEXT, secretTooLarge } from '../util/secret-size.js';
import { defaultTokenFile } from './file-token-store.js';

const url = (what: string) => z.url({ protocol: /^https?$/, error: `${what} must be an http(s) URL` });

/** Where the rest of the interface lives and how to authenticate to it: from the environment over a configuration object. */
export const InterfaceConfigSchema = z.object({
  authUrl: url('AUTH_URL').optional().describe('Token service host, {auth_url} (env AUTH_URL), e.g. https://auth.example.com'),
  apiUrl: url('API_URL').optional().describe('Host of the identity lookup, {api_url} (env API_URL)'),
  consoleUrl: url('CONSOLE_URL').optional().describe('Console host for session control, {base_url} (env CONSOLE_URL)'),
  clientId: z.string().min(1).optional().describe('OAuth client id (env OAUTH_CLIENT_ID)'),
  clientSecret: z.string().min(1).optional().describe('OAuth client secret (env OAUTH_CLIENT_SECRET); a secret, never printed'),
  tokenFile: z
    .string()
    .min(1)
    .describe('Token store, a JSON file of mode 0600 (env SESSION_ETL_TOKEN_FILE; default ~/.config/session-etl/tokens.json)'),
});
export type InterfaceConfig = z.infer<typeof InterfaceConfigSchema>;

export const INTERFACE_ENV: Readonly<Record<keyof InterfaceConfig, string>> = {
  authUrl: 'AUTH_URL',
  apiUrl: 'API_URL',
  consoleUrl: 'CONSOLE_URL',
  clientId: 'OAUTH_CLIENT_ID',
  clientSecret: 'OAUTH_CLIENT_SECRET',
  tokenFile: 'SESSION_ETL_TOKEN_FILE',
};

/** A missing or malformed setting; the CLI shows it as a usage error (exit 2). */
export class InterfaceConfigError extends Error {
  override readonly name = 'InterfaceConfigError';
}

/** Environment variables win over `config`, which wins over defaults; `require`: the fields the caller needs. */
export function loadInterfaceConfig(
  opts: { env?: NodeJS.ProcessEnv; config?: Partial<InterfaceConfig>; require?: ReadonlyArray<keyof InterfaceConfig> } = {},
): InterfaceConfig {
  const env = opts.env ?? process.env;
  const given = Object.entries(opts.config ?? {}).filter(([, v]) => v !== undefined);
  const merged: Record<string, unknown> = { tokenFile: defaultTokenFile(env), ...Object.fromEntries(given) };
  for (const [field, name] of Object.entries(INTERFACE_ENV)) {
    const v = env[name];
    if (v !== undefined && v !== '') merged[field] = v.trim();
  }
  registerSecret(typeof merged.clientSecret === 'string' ? merged.clientSecret : undefined);
  if (typeof merged.clientSecret === 'string' && secretTooLarge(merged.clientSecret)) {
    throw new InterfaceConfigError(`invalid setting: OAUTH_CLIENT_SECRET is longer than ${MAX_SECRET_TEXT}, longer than any client secret: is it the right value? (nothing of it is shown)`);
  }
  const parsed = InterfaceConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const msgs = parsed.error.issues.map((i) => {
      const field = i.path[0] as keyof InterfaceConfig;
      return `${INTERFACE_ENV[field] ?? String(field)}: ${i.message}`;
    });
    throw new InterfaceConfigError(`invalid setting: ${msgs.join('; ')}`);
  }
  const missing = (opts.require ?? []).filter((f) => parsed.data[f] === undefined);
  if (missing.length > 0) {
    throw new InterfaceConfigError(
      `missing setting${missing.length > 1 ? 's' : ''}: ${missing.map((f) => INTERFACE_ENV[f]).join(', ')} ` +
        '(set the environment variable; docs/interface.md lists the values for the local emulator)',
    );
  }
  return parsed.data;
}
