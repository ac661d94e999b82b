/**
 * The accounts of a multi-account emulator: their checks, the seeds derived from their names, and
 * the deterministic accounts of `--accounts N` (names acct-000…, keys derived from the seed).
 */
import type { EmulatorAccount } from './options.js';
import { hash32 } from './prng.js';

/** The same rule as an account name in the configuration file. */
export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const KNOWN_FIELDS = new Set<string>([
  'name', 'apiKey', 'seed', 'sessionsPerDay', 'from', 'to', 'rateLimitRps', 'latencyMs', 'faults', 'revoked',
]);
/** graphql-js Int is 32-bit: instants after 2038-01-19 cannot be sent or returned. */
export const MAX_INSTANT = 2_147_483_647;

/** The data seed of an account that names none: a hash of the emulator's seed and the name. */
export function accountSeed(seed: number, name: string): number {
  return hash32(seed, 0xacc7, ...codePoints(name));
}

/**
 * The accounts `session-etl emulator --accounts N` serves: acct-000, acct-001, … (three digits, more
 * when N > 1000), each key `emulator-key-<name>-<8 hex digits>` derived from `seed` and the name, so
 * a test or the bench can know every key without reading the emulator's output.
 */
export function emulatorAccounts(count: number, seed = 1): EmulatorAccount[] {
  if (!(Number.isSafeInteger(count) && count >= 1)) throw new RangeError(`the number of accounts must be a whole number of at least 1; got ${count}`);
  const digits = Math.max(3, String(count - 1).length);
  return Array.from({ length: count }, (_, i) => {
    const name = `acct-${String(i).padStart(digits, '0')}`;
    return { name, apiKey: `emulator-key-${name}-${hash32(seed, 0x6b65, ...codePoints(name)).toString(16).padStart(8, '0')}` };
  });
}

/** Throws a RangeError naming the account and the setting that is wrong (the key is never shown). */
export function checkAccounts(accounts: unknown): asserts accounts is EmulatorAccount[] {
  if (!Array.isArray(accounts) || accounts.length === 0) throw new RangeError('accounts must be a non-empty list of { name, apiKey, … }');
  const names = new Set<string>();
  const keys = new Set<string>();
  accounts.forEach((a: unknown, i) => {
    const where = `accounts[${i}]`;
    if (!a || typeof a !== 'object' || Array.isArray(a)) throw new RangeError(`${where} must be an object { name, apiKey, … }`);
    const o = a as Record<string, unknown>;
    if (typeof o.name !== 'string' || !ACCOUNT_NAME.test(o.name)) {
      throw new RangeError(`${where}.name must match [a-z0-9][a-z0-9_-]{0,62}; got ${JSON.stringify(o.name)}`);
    }
    const at = `${where} (${o.name})`;
    if (names.has(o.name)) throw new RangeError(`${at}: the name is given twice; account names must be unique`);
    names.add(o.name);
    const unknown = Object.keys(o).find((k) => !KNOWN_FIELDS.has(k));
    if (unknown !== undefined) throw new RangeError(`${at}: unknown setting ${JSON.stringify(unknown)}; known: ${[...KNOWN_FIELDS].join(', ')}`);
    if (typeof o.apiKey !== 'string' || o.apiKey.trim() === '') throw new RangeError(`${at}.apiKey must be a non-empty string`);
    if (keys.has(o.apiKey)) throw new RangeError(`${at}.apiKey is the key of another account; each account needs its own key`);
    keys.add(o.apiKey);
    const check = (k: string, ok: (v: unknown) => boolean, what: string): void => {
      if (o[k] !== undefined && !ok(o[k])) throw new RangeError(`${at}.${k} must be ${what}; got ${JSON.stringify(o[k])}`);
    };
    const number = (v: unknown, max = Infinity): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= max;
    check('seed', Number.isSafeInteger, 'an integer');
    check('sessionsPerDay', number, 'a non-negative number');
    for (const k of ['from', 'to']) check(k, (v) => number(v, MAX_INSTANT), 'epoch seconds between 1970 and 2038');
    check('revoked', (v) => typeof v === 'boolean', 'true or false');
    if (o.faults !== undefined && (!o.faults || typeof o.faults !== 'object' || Array.isArray(o.faults))) {
      throw new RangeError(`${at}.faults must be an object of fault settings`);
    }
  });
}

/** The account's own fault settings: `faults` with the `rateLimitRps` and `latencyMs` shorthands on top. */
export function accountOverrides(a: EmulatorAccount): EmulatorAccount['faults'] & object {
  return {
    ...a.faults,
    ...(a.rateLimitRps !== undefined ? { rateLimitRps: a.rateLimitRps } : {}),
    ...(a.latencyMs !== undefined ? { latencyMs: a.latencyMs } : {}),
  };
}

function codePoints(s: string): number[] {
  return Array.from(s, (c) => c.codePointAt(0) as number);
}
