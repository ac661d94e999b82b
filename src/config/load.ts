/** The effective configuration: defaults < file (--config, SESSION_ETL_CONFIG) < environment < flags, and each value's source. */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { receiverOf, registerNotifyUrlSecret } from '../util/notify-url.js';
import { CONFIG_DEFAULTS } from './defaults.js';
import { ConfigError, KeyFileError, refusedConfig, type RefusedValueIssue, type Source } from './errors.js';
import { redact, registerSecret, REDACTED } from '../util/redact.js';
import { MAX_SECRET_TEXT, readSecretFile, SecretFileError, secretTooLarge } from '../util/secret-size.js';
import type { z } from 'zod';
import { readProblem } from '../util/read-problem.js';
import { ACCOUNT_NAME, AccountSchema, ConfigSchema, type Config } from './schema.js';
import { rememberConfigFile } from '../util/suggested-command.js';

export type { Source } from './errors.js';

/** The environment variables the .env file set (the CLI reads it at start; a variable set already wins). */
let dotEnvNames = new Set<string>();

/** Called by the CLI once it has read the .env file, so that `config` says which variables came from it. */
export function setDotEnvNames(names: Iterable<string>): void {
  dotEnvNames = new Set(names);
}

export interface LoadedConfig {
  config: Config & { apiKey: string | null };
  sources: Record<string, Source>;
  file: string | null;
}

/** Environment variables and the keys they set. */
export const ENV_KEYS: Record<string, keyof Config> = {
  REPORTING_URL: 'reportingUrl',
  REPORTING_API_KEY: 'apiKey',
  REPORTING_API_KEY_FILE: 'apiKeyFile',
  SESSION_ETL_DATA_DIR: 'dataDir',
  SESSION_ETL_FORMAT: 'format',
  SESSION_ETL_PARQUET_URL: 'parquetUrl',
  SESSION_ETL_S3_PATH_STYLE: 's3PathStyle',
  SESSION_ETL_LOG_LEVEL: 'logLevel',
  SESSION_ETL_NOTIFY_URL: 'notifyUrl',
  SESSION_ETL_MEMORY_LIMIT: 'memoryLimit',
};

export interface LoadOptions {
  /** Values from CLI flags, named as config keys; undefined ones are ignored. */
  flags?: Partial<Record<keyof Config, unknown>>;
  configFile?: string;
  env?: NodeJS.ProcessEnv;
}

export function loadConfig(opts: LoadOptions = {}): LoadedConfig {
  const env = opts.env ?? process.env;
  const sources: Record<string, Source> = {};
  const merged: Record<string, unknown> = {};
  const put = (obj: Record<string, unknown>, source: Source) => {
    for (const [k, v] of Object.entries(obj)) {
      if (v === undefined) continue;
      merged[k] = v;
      sources[k] = source;
    }
  };
  put({ ...CONFIG_DEFAULTS }, 'default');

  const file = opts.configFile ?? env.SESSION_ETL_CONFIG ?? null;
  // Every command suggested from now on names the same configuration.
  rememberConfigFile(file);
  if (file) {
    const fromFile = readJson(file, 'configuration file');
    if (Object.hasOwn(fromFile, 'apiKey') && fromFile.apiKey) {
      throw new ConfigError(
        `configuration file ${file} holds apiKey: keep the key out of files that may be committed; ` +
          'set REPORTING_API_KEY in the environment or point apiKeyFile at a file with mode 0600',
      );
    }
    refuseAccountKeys(fromFile.accounts, file);
    put(fromFile, 'file');
    // A bad value in the file is an error even when the environment or a flag overrides it today.
    const fileOnly = ConfigSchema.safeParse(merged);
    if (!fileOnly.success) throw invalidConfig(fileOnly.error.issues, sources, file, merged);
  }
  for (const [name, key] of Object.entries(ENV_KEYS)) {
    const v = env[name];
    if (v !== undefined && v !== '') put({ [key]: v }, env === process.env && dotEnvNames.has(name) ? 'env-file' : 'env');
  }
  put((opts.flags ?? {}) as Record<string, unknown>, 'flag');
  for (const key of URL_KEYS) registerUrlSecrets(merged[key]);

  const parsed = ConfigSchema.safeParse(merged);
  if (!parsed.success) throw invalidConfig(parsed.error.issues, sources, file, merged);
  const config = parsed.data as Config & { apiKey: string | null };
  // Registered before anything else is done with it (an oversized key too: it is refused, never shown).
  registerSecret(config.apiKey);
  if (config.apiKey && secretTooLarge(config.apiKey)) {
    throw new ConfigError(`the API key (REPORTING_API_KEY) is longer than ${MAX_SECRET_TEXT}, longer than any key: is it the right value? (nothing of it is shown)`);
  }
  if (!config.apiKey && config.apiKeyFile) {
    try {
      config.apiKey = readSecretFile(config.apiKeyFile);
      sources.apiKey = 'file';
    } catch (err) {
      if (!(err instanceof SecretFileError)) throw err;
      const where = sources.apiKeyFile === 'env' ? 'REPORTING_API_KEY_FILE' : 'apiKeyFile';
      throw new KeyFileError(where, config.apiKeyFile, err.reason);
    }
  }
  config.apiKey ??= null;
  registerSecret(config.apiKey);
  registerNotifyUrlSecret(config.notifyUrl);
  return { config, sources, file };
}

/** An account name that cannot be one, or an entry holding its key itself: refused, naming the account (never the key). */
function refuseAccountKeys(accounts: unknown, file: string): void {
  if (!accounts || typeof accounts !== 'object' || Array.isArray(accounts)) return;
  for (const [name, entry] of Object.entries(accounts as Record<string, unknown>)) {
    if (!ACCOUNT_NAME.test(name)) {
      throw new ConfigError(
        `configuration file ${file}: ${JSON.stringify(name)} cannot be an account name: an account name is 1 to 63 characters of a-z, 0-9, _ and -, ` +
          'starting with a letter or digit (it names a directory and a partition, account=NAME)',
      );
    }
    if (entry && typeof entry === 'object' && Object.hasOwn(entry, 'apiKey')) {
      throw new ConfigError(
        `configuration file ${file}: account ${JSON.stringify(name)} holds apiKey: an account's key is never written in the configuration; ` +
          'give apiKeyFile (a file holding the key, such as a mounted Secret) or apiKeyEnv (the name of an environment variable holding it)',
      );
    }
  }
}

/** The configuration keys holding URLs: their user:password part is a secret. */
const URL_KEYS = ['reportingUrl', 'authUrl', 'apiUrl', 'consoleUrl'] as const;

function registerUrlSecrets(value: unknown): void {
  if (typeof value !== 'string') return;
  try {
    const u = new URL(value);
    registerSecret(decodeURIComponent(u.password));
    registerSecret(u.password);
  } catch {
    // Not a URL: the schema says so, without printing the value.
  }
}

function invalidConfig(issues: z.core.$ZodIssue[], sources: Record<string, Source>, file: string | null, input: Record<string, unknown>): ConfigError {
  return refusedConfig(issues as RefusedValueIssue[], {
    sources,
    file,
    input,
    envNames: ENV_KEYS,
    knownKeys: Object.keys(ConfigSchema.shape),
    knownAccountKeys: Object.keys(AccountSchema.shape),
  });
}

/** Line and column (1-based) of a character offset in `text`. */
function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line}, column ${offset - (before.lastIndexOf('\n') + 1) + 1}`;
}

/** 10,000 accounts pretty-printed are about 1.5 MB: a larger file is the wrong file (a log, a dump), refused unread. */
export const MAX_CONFIG_BYTES = 4 * 2 ** 20;

/** The file's text, refused beyond MAX_CONFIG_BYTES: by its size before reading, and the read stops past the cap (a pipe). */
function readCapped(path: string, what: string): string {
  const tooLarge = (size: string) =>
    new ConfigError(`${what} ${path} is ${size}, larger than the 4 MiB a configuration file may be: is it the right file? (none of it is shown)`);
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const st = fstatSync(fd);
    if (st.isFile() && st.size > MAX_CONFIG_BYTES) throw tooLarge(`${(st.size / 2 ** 20).toFixed(1)} MiB`);
    const buf = Buffer.alloc(MAX_CONFIG_BYTES + 1);
    let length = 0;
    for (let n = 1; n > 0 && length < buf.length; length += n) n = readSync(fd, buf, length, buf.length - length, null);
    if (length > MAX_CONFIG_BYTES) throw tooLarge('more than 4 MiB');
    return buf.subarray(0, length).toString('utf8');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${what} ${path} cannot be read: ${readProblem(err)}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function readJson(path: string, what: string): Record<string, unknown> {
  const text = readCapped(path, what);
  let v: unknown;
  try {
    v = JSON.parse(text) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
  } catch (err) {
    // Never the parser's message: it quotes the text (a key file given as --config would show its first characters).
    const msg = (err as Error).message;
    const lc = /line (\d+) column (\d+)/.exec(msg);
    const at = /position (\d+)/.exec(msg)?.[1];
    const place = lc ? `line ${lc[1]}, column ${lc[2]}` : at !== undefined ? lineAndColumn(text, Number(at)) : /end of JSON input/.test(msg) ? 'the end: it stops short' : undefined;
    const problem = msg === 'not a JSON object' ? 'it is not a JSON object' : `it is not valid JSON${place ? ` (error at ${place})` : ''}`;
    throw new ConfigError(`${what} ${path} cannot be used: ${problem}; it must hold one JSON object of configuration keys`);
  }
  const bad = forbiddenKey(v);
  if (bad) {
    throw new ConfigError(
      `${what} ${path} cannot be used: it has the key ${JSON.stringify(bad.key)}${bad.at ? ` (in ${bad.at})` : ''}; ` +
        '__proto__, constructor and prototype are refused anywhere in it (they would change how JavaScript reads the file, and could carry a key past its checks)',
    );
  }
  return v as Record<string, unknown>;
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The first forbidden key at any depth of `root` (JSON.parse makes them own keys), with where it is. */
function forbiddenKey(root: unknown): { key: string; at: string } | null {
  const stack: Array<{ value: unknown; at: string }> = [{ value: root, at: '' }];
  while (stack.length) {
    const { value, at } = stack.pop()!;
    if (!value || typeof value !== 'object') continue;
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_KEYS.has(key)) return { key, at };
      stack.push({ value: (value as Record<string, unknown>)[key], at: at ? `${at}.${key}` : key });
    }
  }
  return null;
}

/** The configuration as `session-etl config` prints it: secrets redacted, each value with its source. */
export function describeConfig(loaded: LoadedConfig): Array<{ key: string; value: unknown; source: Source }> {
  return Object.keys(ConfigSchema.shape).map((key) => {
    let value = (loaded.config as Record<string, unknown>)[key] ?? null;
    if (key === 'apiKey' && value) value = REDACTED;
    else if (key === 'notifyUrl' && value) value = `${receiverOf(String(value))}/${REDACTED}`;
    else if (typeof value === 'string') value = redact(value);
    return { key, value, source: loaded.sources[key] ?? 'default' };
  });
}
