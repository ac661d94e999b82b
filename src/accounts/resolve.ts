/**
 * Each configured account's effective configuration: the top-level one, then the account's overrides
 * (a flag still wins), and its key. A key that cannot be read fails that account only.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config/errors.js';
import type { LoadedConfig } from '../config/load.js';
import type { AccountConfig, Config } from '../config/schema.js';
import { registerSecret } from '../util/redact.js';
import { MAX_SECRET_TEXT, readSecretFile, SecretFileError, secretTooLarge } from '../util/secret-size.js';
import { ACCOUNTS_DIR } from './layout.js';

type KeySource = { kind: 'file'; path: string } | { kind: 'env'; name: string };

export interface ResolvedAccount {
  name: string;
  /** The account's configuration (apiKey set when it could be read). */
  loaded: LoadedConfig;
  keySource: KeySource;
  /** Why the key could not be read (the account fails; the others run), else null. */
  keyError: string | null;
}

/** Account overrides and the configuration key each one sets. */
const OVERRIDES = [
  'reportingUrl', 'startDate', 'maxRequestsPerSecond', 'concurrency', 'chunk', 'maxResultsPerQuery', 'minChunk',
  'settle', 'lookback', 'onInvalid', 'requestTimeout', 'maxAttempts', 'maxBodyBytes',
] as const satisfies ReadonlyArray<keyof AccountConfig & keyof Config>;

export function accountNames(loaded: LoadedConfig): string[] {
  return Object.keys(loaded.config.accounts ?? {}).sort();
}

export function hasAccounts(loaded: LoadedConfig): boolean {
  return accountNames(loaded).length > 0;
}

export function keySourceOf(a: AccountConfig): KeySource {
  return a.apiKeyFile !== undefined ? { kind: 'file', path: a.apiKeyFile } : { kind: 'env', name: a.apiKeyEnv! };
}

/** The named accounts resolved. Refuses (exit 2) a single-account key beside `accounts` (used by no one). */
export function resolveAccounts(loaded: LoadedConfig, names: readonly string[], env: NodeJS.ProcessEnv = process.env): ResolvedAccount[] {
  const c = loaded.config;
  const accounts = c.accounts ?? {};
  if (c.apiKey || c.apiKeyFile) {
    const where = loaded.sources.apiKeyFile === 'file' || loaded.sources.apiKey === 'file' ? 'apiKeyFile in the configuration file' : 'REPORTING_API_KEY / REPORTING_API_KEY_FILE in the environment';
    throw new ConfigError(
      `the configuration has an accounts map and also a single key (${where}): with accounts, each account has its own key ` +
        '(apiKeyFile or apiKeyEnv in its entry); remove the single key',
    );
  }
  return names.map((name) => {
    const a = accounts[name];
    if (!a) throw new ConfigError(`no account called ${JSON.stringify(name)} in the configuration`);
    const config = { ...c, apiKey: null as string | null };
    const sources = { ...loaded.sources };
    for (const key of OVERRIDES) {
      const v = a[key];
      if (v === undefined || loaded.sources[key] === 'flag') continue;
      (config as Record<string, unknown>)[key] = v;
      sources[key] = 'file';
    }
    const keySource = keySourceOf(a);
    let keyError: string | null = null;
    try {
      config.apiKey = readKey(keySource, env);
      registerSecret(config.apiKey);
    } catch (err) {
      keyError = (err as Error).message;
    }
    return { name, loaded: { ...loaded, config, sources }, keySource, keyError };
  });
}

/** The account's key, or an Error whose message completes "account NAME: …" and never holds any of the key. */
function readKey(source: KeySource, env: NodeJS.ProcessEnv): string {
  if (source.kind === 'env') {
    const v = env[source.name]?.trim();
    if (!v) throw new Error(`its key is not set: environment variable ${source.name} (apiKeyEnv) is ${source.name in env ? 'empty' : 'not set'}`);
    if (secretTooLarge(v)) {
      registerSecret(v);
      throw new Error(`its key in environment variable ${source.name} (apiKeyEnv) is longer than ${MAX_SECRET_TEXT}, longer than any key: is it the right variable? (nothing of it is shown)`);
    }
    return v;
  }
  try {
    return readSecretFile(source.path);
  } catch (err) {
    if (!(err instanceof SecretFileError)) throw err;
    throw new Error(`its key file ${source.path} (apiKeyFile) ${err.reason}`);
  }
}

/** A single-account run refuses a data directory that holds accounts (it would mix its partitions into theirs). */
export function refuseAccountsDir(root: string): void {
  if (existsSync(join(root, ACCOUNTS_DIR))) {
    throw new ConfigError(
      `data directory ${root} holds many accounts (${join(root, ACCOUNTS_DIR)}, the layout before schema 3), and the configuration has no accounts map: ` +
        'give the configuration file with the accounts (--config), or another --data-dir',
    );
  }
}
