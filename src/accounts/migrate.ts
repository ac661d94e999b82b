/** `session-etl accounts migrate`: what a many-account run does first (bring-in.ts), without fetching. */
import { mkdir } from 'node:fs/promises';
import type { LoadedConfig } from '../config/load.js';
import { ConfigError } from '../config/errors.js';
import { layoutOf, refuseLinks } from '../store/layout.js';
import { acquireLock } from '../store/lock.js';
import { SessionStore } from '../store/session-store.js';
import { silentLogger } from '../util/logger.js';
import { accountNames } from './resolve.js';
import { bringAccountsIn, type MovedAccount } from './bring-in.js';
import { legacyFormat } from './legacy.js';
import { parseShard, selectAccounts } from './select.js';
import { byStore, shardCount } from './stores.js';

export async function migrateAccounts(loaded: LoadedConfig, shard?: string): Promise<MovedAccount[]> {
  const root = loaded.config.dataDir;
  const configured = accountNames(loaded);
  if (!configured.length) throw new ConfigError('accounts migrate needs an accounts map in the configuration file (docs/accounts.md)');
  const given = shard !== undefined ? parseShard(shard) : undefined;
  const names = selectAccounts(configured, [], given);
  const count = await shardCount(root, given);
  await refuseLinks(root);
  const moved: MovedAccount[] = [];
  for (const group of byStore(names, count)) {
    const layout = layoutOf(root, 'both', group.store);
    await mkdir(layout.storeDir, { recursive: true, mode: 0o750 });
    const lock = await acquireLock(layout.lockPath, { command: 'accounts migrate' });
    try {
      const format = loaded.sources.format && loaded.sources.format !== 'default' ? loaded.config.format : legacyFormat(root, group.names);
      const store = await SessionStore.open({ dataDir: root, accounts: 'many', ...(format ? { format } : {}), ...(group.store ? { shard: group.store } : {}) });
      try {
        moved.push(...(await bringAccountsIn(store, root, group.store, group.names, silentLogger)));
      } finally {
        await store.close();
      }
    } finally {
      await lock.release();
    }
  }
  return moved;
}
