import { ExitCode } from '../errors.js';
import { didYouMean } from '../util/did-you-mean.js';
import { looksLikeKey } from './looks-like-key.js';

/** The configuration cannot be used (unreadable, not JSON, a refused value, a secret in a file). Exit 2; nothing is written. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly exitCode = ExitCode.usage;
}

/**
 * The API key file cannot give a key (missing, unreadable, empty, too large): exit 2 for the commands that need the
 * key; `config` shows the key file marked instead, since it is the command that diagnoses exactly this.
 */
export class KeyFileError extends ConfigError {
  constructor(
    /** `apiKeyFile` or `REPORTING_API_KEY_FILE`. */
    readonly setting: string,
    readonly path: string,
    /** Completes "key file PATH …", such as "cannot be read: no such file"; never quotes the file. */
    readonly reason: string,
  ) {
    super(`${setting} ${path} ${reason}`);
  }
}

export function isConfigError(e: unknown): e is ConfigError {
  return e instanceof ConfigError;
}

/** Where a value came from: `env-file` is the environment as set by the working directory's .env file. */
export type Source = 'default' | 'file' | 'env' | 'env-file' | 'flag';

/** The fields of zod's issue read here. */
export interface RefusedValueIssue {
  code: string;
  path: PropertyKey[];
  message: string;
  keys?: string[];
  expected?: string;
  values?: unknown[];
  origin?: string;
  minimum?: number | bigint;
  maximum?: number | bigint;
  inclusive?: boolean;
  format?: string;
}

/** What the user typed for a setting, where that differs from its key (`schedule --cron`). */
const FLAG_NAMES: Record<string, string> = { scheduleCron: '--cron', scheduleTimezone: '--timezone' };

/** Settings whose value is never echoed: a key, where a key is, or a URL whose path or user part is a secret. */
const NEVER_ECHOED = new Set(['apiKey', 'apiKeyFile', 'apiKeyEnv', 'notifyUrl', 'parquetUrl', 'oauthClientId', 'tokenFile']);

interface RefusedConfigContext {
  /** Where each top-level key's value came from. */
  sources: Record<string, Source>;
  file: string | null;
  /** The merged values the schema was given. */
  input: Record<string, unknown>;
  /** Environment variable → configuration key. */
  envNames: Record<string, string>;
  /** For did-you-mean. */
  knownKeys: readonly string[];
  knownAccountKeys: readonly string[];
}

/**
 * The one place that turns refused configuration values into a message: each line names the setting as the user
 * wrote it (`--cron`, `SESSION_ETL_FORMAT`, `settle` with its file), what was given (never a secret), what is expected.
 */
export function refusedConfig(issues: readonly RefusedValueIssue[], ctx: RefusedConfigContext): ConfigError {
  const lines = issues.map((i) => {
    if (i.code === 'unrecognized_keys') {
      // An account's entry (accounts.NAME) has keys of its own.
      const known = i.path[0] === 'accounts' ? ctx.knownAccountKeys : ctx.knownKeys;
      const prefix = i.path.length ? `${i.path.join('.')}.` : '';
      const named = (i.keys ?? []).map((k) => `${prefix}${k}${didYouMean(k, known, (n) => `${prefix}${n}`)}`);
      return `unknown configuration key(s) ${named.join(', ')}${ctx.file ? ` in ${ctx.file}` : ''}`;
    }
    const value = valueAt(ctx.input, i.path);
    // A message of the schema's own may say what it was given already (", got …", or the value quoted: `"10" has no unit`).
    const shown = describeGiven(value);
    const given = echoable(i.path, value) && !/, got /.test(i.message) && !i.message.includes(shown) ? `got ${shown}; ` : '';
    const near = i.path.length === 1 && i.path[0] === 'scheduleTimezone' && typeof value === 'string' ? didYouMean(value, Intl.supportedValuesOf('timeZone')) : '';
    return `${settingName(i.path, ctx)}: ${given}${expectation(i)}${near}`;
  });
  return new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
}

/** `--cron (from command line)`, `SESSION_ETL_FORMAT (from environment)`, `settle (from file config.json)`. */
function settingName(path: readonly PropertyKey[], ctx: RefusedConfigContext): string {
  const key = String(path[0] ?? '');
  const dotted = path.map(String).join('.') || '(root)';
  const source = ctx.sources[key];
  switch (source) {
    case 'flag':
      return `${FLAG_NAMES[key] ?? `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`} (from command line)`;
    case 'env':
    case 'env-file':
      return `${Object.entries(ctx.envNames).find(([, k]) => k === key)?.[0] ?? key} (from ${source === 'env' ? 'environment' : '.env file'})`;
    case 'file':
      return `${dotted} (from file ${ctx.file})`;
    default:
      return dotted;
  }
}

function valueAt(input: Record<string, unknown>, path: readonly PropertyKey[]): unknown {
  let v: unknown = input;
  for (const p of path) {
    if (!v || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

function echoable(path: readonly PropertyKey[], value: unknown): boolean {
  if (value === undefined) return false;
  if (path.some((p) => NEVER_ECHOED.has(String(p)))) return false;
  // A URL's user:password part, or a key pasted into the wrong setting (REPORTING_URL=<the key>), is never shown.
  if (typeof value === 'string' && /@/.test(value) && /:\/\//.test(value)) return false;
  if (typeof value === 'string' && value.split(/[\s/?&=#:]+/).some(looksLikeKey)) return false;
  return typeof value !== 'string' || value.length <= 200;
}

function describeGiven(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `the ${typeof v} ${String(v)}`;
}

const TYPE_NAMES: Record<string, string> = {
  number: 'a number',
  int: 'a whole number',
  string: 'text (a JSON string)',
  boolean: 'true or false',
  object: 'an object',
  record: 'an object',
  array: 'a list',
};

/** What is expected: the schema's own words, or plain ones for zod's defaults ("Invalid input: …"). */
function expectation(i: RefusedValueIssue): string {
  if (!/^(Invalid |Too small|Too big)/.test(i.message)) return i.message;
  const bound = (n: number | bigint | undefined, inclusive: boolean | undefined, word: string, strict: string) =>
    `${inclusive === false ? strict : word} ${String(n)}`;
  switch (i.code) {
    case 'invalid_type':
      return `expected ${TYPE_NAMES[i.expected ?? ''] ?? i.expected}`;
    case 'invalid_value':
      return `expected ${oneOf((i.values ?? []).map((v) => JSON.stringify(v)))}`;
    case 'too_small':
      return i.origin === 'string'
        ? Number(i.minimum) <= 1 ? 'expected a value that is not empty' : `expected at least ${String(i.minimum)} characters`
        : `expected a number ${bound(i.minimum, i.inclusive, 'of at least', 'greater than')}`;
    case 'too_big':
      return i.origin === 'string' ? `expected at most ${String(i.maximum)} characters` : `expected a number ${bound(i.maximum, i.inclusive, 'of at most', 'less than')}`;
    case 'invalid_format':
      return i.format === 'url' ? 'expected a URL such as https://host.example.com (scheme and host included)' : `expected the ${i.format ?? 'right'} format`;
    default:
      return i.message;
  }
}

function oneOf(names: string[]): string {
  return names.length <= 1 ? (names[0] ?? 'a known value') : `one of ${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}
