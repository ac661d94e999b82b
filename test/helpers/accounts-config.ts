/** A many-account configuration file written as a user would write it (docs/accounts.md). */
import { writeFile } from 'node:fs/promises';

/** An account's entry: the name of the environment variable that holds its key, or the whole entry. */
export type AccountEntry = string | ({ apiKeyEnv: string } & Record<string, unknown>);

/**
 * Writes `settings` (dataDir, reportingUrl, format, …) and `accounts` to `path` as JSON, an account
 * given as a string becoming `{ apiKeyEnv: <it> }`. Returns the path.
 */
export async function writeAccountsConfig(path: string, settings: Record<string, unknown>, accounts: Record<string, AccountEntry>): Promise<string> {
  const entries = Object.fromEntries(Object.entries(accounts).map(([name, e]) => [name, typeof e === 'string' ? { apiKeyEnv: e } : e]));
  await writeFile(path, JSON.stringify({ ...settings, accounts: entries }));
  return path;
}

/** Each of `names` with its key in the same environment variable (and the same further settings). */
export function sameKey(names: readonly string[], apiKeyEnv: string, extra: Record<string, unknown> = {}): Record<string, AccountEntry> {
  return Object.fromEntries(names.map((n) => [n, { apiKeyEnv, ...extra }]));
}
