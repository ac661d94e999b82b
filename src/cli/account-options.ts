/** The account flags (--account, --shard, --account-concurrency) and the accounts they choose; light, imported at registration. */
import { Command } from 'commander';
import { hasAccounts, refuseAccountsDir } from '../accounts/resolve.js';
import { parseShard, selectAccounts } from '../accounts/select.js';
import type { LoadedConfig } from '../config/load.js';
import { UsageError } from './usage-error.js';

/** commander's value parser for a repeatable option: every value given, in order. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export interface AccountFlags {
  account?: string[];
  shard?: string;
  accountConcurrency?: string;
}

const DEFAULT_ACCOUNT_CONCURRENCY = 4;

export function addAccountOptions(cmd: Command): Command {
  return addAccountSelection(cmd).option('--account-concurrency <n>', `with an accounts map: accounts run side by side (default ${DEFAULT_ACCOUNT_CONCURRENCY})`);
}

/** --account and --shard (commands that read: status, sessions). */
export function addAccountSelection(cmd: Command): Command {
  return cmd
    .option('--account <name>', 'with an accounts map: only this account (repeatable; default all)', collect)
    .option('--shard <i/n>', 'with an accounts map: only the accounts whose FNV-1a 32-bit hash of the name modulo N is I (docs/accounts.md)');
}

/** The accounts a command works on, or null without an accounts map (a data directory that holds accounts is refused then). */
export function chosenAccounts(loaded: LoadedConfig, flags: AccountFlags): string[] | null {
  const named = flags.account ?? [];
  if (!hasAccounts(loaded)) {
    if (named.length || flags.shard !== undefined || flags.accountConcurrency !== undefined) {
      const flag = named.length ? '--account' : flags.shard !== undefined ? '--shard' : '--account-concurrency';
      throw new UsageError(`${flag} needs an accounts map in the configuration file (docs/accounts.md); none is configured`);
    }
    refuseAccountsDir(loaded.config.dataDir);
    return null;
  }
  return selectAccounts(Object.keys(loaded.config.accounts ?? {}), named, flags.shard !== undefined ? parseShard(flags.shard) : undefined);
}

export function accountConcurrency(flags: AccountFlags): number {
  const v = flags.accountConcurrency;
  if (v === undefined) return DEFAULT_ACCOUNT_CONCURRENCY;
  if (!/^\d+$/.test(v.trim()) || Number(v) < 1 || Number(v) > 1000) {
    throw new UsageError(`--account-concurrency must be a whole number from 1 to 1000, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

