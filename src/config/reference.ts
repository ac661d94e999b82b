/** Renders the configuration reference (docs/configuration.md) from the zod schema's descriptions. */
import { ConfigSchema } from './schema.js';
import { ENV_KEYS } from './load.js';
import { CONFIG_DEFAULTS } from './defaults.js';

const NO_FLAG = ['reportingUrl', 'apiKey', 'apiKeyFile', 'maxBodyBytes', 's3PathStyle', 'authUrl', 'apiUrl', 'consoleUrl', 'oauthClientId'];

/** Keys whose flag is not the kebab-case of the key (— : no flag). */
const FLAG_OF: Record<string, string> = {
  ...Object.fromEntries([...NO_FLAG, 'tokenFile', 'verifyCron', 'verifyRange', 'verifySample', 'verifyRepair'].map((k) => [k, '—'])),
  startDate: '`--since` (export)',
  scheduleCron: '`--cron` (schedule)',
  scheduleTimezone: '`--timezone` (schedule)',
  accounts: '— (`--account`, `--shard` choose among them)',
};

/** Environment variables read by the interface commands (src/auth/interface-config.ts), not by loadConfig. */
const INTERFACE_ENV_OF: Record<string, string> = {
  authUrl: 'AUTH_URL',
  apiUrl: 'API_URL',
  consoleUrl: 'CONSOLE_URL',
  oauthClientId: 'OAUTH_CLIENT_ID',
  tokenFile: 'SESSION_ETL_TOKEN_FILE',
};

export function configReferenceMarkdown(): string {
  const envOf: Record<string, string> = { ...INTERFACE_ENV_OF, ...Object.fromEntries(Object.entries(ENV_KEYS).map(([env, key]) => [key, env])) };
  const d: Record<string, unknown> = CONFIG_DEFAULTS;
  const rows = Object.entries(ConfigSchema.shape).map(([key, schema]) => {
    const def = key in d ? JSON.stringify(d[key]) : '—';
    const env = envOf[key] ? `\`${envOf[key]}\`` : '—';
    const flag = key in FLAG_OF ? FLAG_OF[key] : `\`--${key.replace(/[A-Z]/g, (m) => '-' + m.toLowerCase())}\``;
    return `| \`${key}\` | ${def} | ${env} | ${flag} | ${(schema as { description?: string }).description ?? ''} |`;
  });
  return ['| key | default | environment | flag | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}
