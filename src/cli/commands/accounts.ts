import { Command } from 'commander';
import { keySourceOf } from '../../accounts/resolve.js';
import { shardOf } from '../../accounts/select.js';
import { loadConfig } from '../../config/load.js';
import { UsageError } from '../usage-error.js';

export function register(program: Command): void {
  const accounts = program.command('accounts').description('The accounts of a many-account configuration (docs/accounts.md)');
  accounts
    .command('list')
    .description('The configured accounts, where each key comes from (never the key), and with --shards N the shard of each')
    .option('--config <file>', 'configuration file; also SESSION_ETL_CONFIG')
    .option('--shards <n>', 'also show each account\'s shard among N (FNV-1a 32-bit of the name, modulo N)')
    .option('--json', 'print as JSON')
    .action((flags: { config?: string; shards?: string; json?: boolean }) => {
      const { config } = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}) });
      const n = flags.shards === undefined ? undefined : Number(flags.shards);
      if (n !== undefined && (!/^\d+$/.test(String(flags.shards).trim()) || n < 1)) {
        throw new UsageError(`--shards must be a whole number of at least 1, got ${JSON.stringify(flags.shards)}`);
      }
      const rows = Object.entries(config.accounts ?? {})
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, a]) => {
          const key = keySourceOf(a);
          const overrides = Object.keys(a).filter((k) => k !== 'apiKeyFile' && k !== 'apiKeyEnv');
          return { name, key: key.kind === 'file' ? `file ${key.path}` : `env ${key.name}`, overrides, ...(n ? { shard: shardOf(name, n) } : {}) };
        });
      if (flags.json) {
        process.stdout.write(JSON.stringify({ accounts: rows }) + '\n');
        return;
      }
      if (!rows.length) {
        process.stdout.write('no accounts configured (single-account configuration)\n');
        return;
      }
      // Columns aligned (names and key sources differ in length); the overrides, of any length, last.
      const table = [
        ['ACCOUNT', 'KEY FROM', ...(n ? ['SHARD'] : []), 'OVERRIDES'],
        ...rows.map((r) => [r.name, r.key, ...(n ? [`${r.shard}/${n}`] : []), r.overrides.join(', ') || '-']),
      ];
      const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
      for (const row of table) process.stdout.write(row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ') + '\n');
    });
  accounts
    .command('adopt <name>')
    .description('Make the single-account data in the data directory this account\'s, for a many-account configuration (no fetching again)')
    .option('--config <file>', 'configuration file; also SESSION_ETL_CONFIG')
    .option('--data-dir <dir>', 'data directory; also SESSION_ETL_DATA_DIR (default ./data)')
    .action(async (name: string, flags: { config?: string; dataDir?: string }) => {
      const { config } = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}), flags: { dataDir: flags.dataDir } });
      const { adoptDataDir } = await import('../../accounts/adopt.js');
      const r = await adoptDataDir(config.dataDir, name);
      process.stdout.write(
        `adopted ${config.dataDir} as account ${r.account}: ${r.sessions !== null ? `${r.sessions} sessions, ` : ''}${r.partitions} day files rewritten with the account column\n` +
          (config.accounts?.[name] ? '' : `note: add "${name}" to the accounts map of the configuration (with its apiKeyFile or apiKeyEnv) to export it\n`),
      );
    });
  accounts
    .command('migrate')
    .description('Move every configured account\'s data into its store now (the layout before schema 3, or another number of shards), without fetching; a run does the same first')
    .option('--config <file>', 'configuration file; also SESSION_ETL_CONFIG')
    .option('--shard <i/n>', 'the accounts of this shard only, into its store')
    .option('--json', 'print as JSON')
    .action(async (flags: { config?: string; shard?: string; json?: boolean }) => {
      const loaded = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}) });
      const { migrateAccounts } = await import('../../accounts/migrate.js');
      const moved = await migrateAccounts(loaded, flags.shard);
      if (flags.json) process.stdout.write(JSON.stringify({ moved }) + '\n');
      else if (!moved.length) process.stdout.write('nothing to move: every account is in its store\n');
      else for (const m of moved) process.stdout.write(`moved ${m.account}: ${m.sessions} sessions, from ${m.from}\n`);
    });
}
