/**
 * `session-etl accounts adopt NAME`: makes a single-account store the store of many accounts holding
 * this one, in place, under the data directory's lock (docs/accounts.md "Adopting"). Cut short, the
 * next run (with the accounts map) finishes the day files' rewrites.
 */
import { ConfigError } from '../config/errors.js';
import { ACCOUNT_NAME } from '../config/schema.js';
import { queryRows } from '../store/duckdb.js';
import { layoutOf, refuseLinks } from '../store/layout.js';
import { acquireLock } from '../store/lock.js';
import { SessionStore } from '../store/session-store.js';
import { topStoreExists } from './stores.js';

interface AdoptResult {
  account: string;
  /** Sessions now the account's (null: format parquet, see the dataset). */
  sessions: number | null;
  partitions: number;
}

export async function adoptDataDir(root: string, name: string): Promise<AdoptResult> {
  if (!ACCOUNT_NAME.test(name)) {
    throw new ConfigError(`${JSON.stringify(name)} cannot be an account name: 1 to 63 characters of a-z, 0-9, _ and -, starting with a letter or digit`);
  }
  if (!topStoreExists(root)) throw new ConfigError(`no single-account data in ${root} (no sessions.duckdb or state.duckdb): nothing to adopt`);
  await refuseLinks(root);
  const lock = await acquireLock(layoutOf(root, 'both').lockPath, { command: `accounts adopt ${name}` });
  try {
    const single = await SessionStore.open({ dataDir: root });
    try {
      if (single.shape.many) {
        throw new ConfigError(`${root} holds many accounts already (${single.layout.dbPath}): add ${name} to the accounts map instead; nothing to adopt`);
      }
      await single.convertToMany(name);
    } finally {
      await single.close();
    }
    const many = await SessionStore.open({ dataDir: root, accounts: 'many' });
    try {
      const flushed = await many.flush();
      const rows = many.format === 'parquet' ? null : Number((await queryRows<{ n: bigint }>(many.conn, 'SELECT count(*) AS n FROM sessions'))[0]!.n);
      return { account: name, sessions: rows, partitions: flushed.partitions.length };
    } finally {
      await many.close();
    }
  } finally {
    await lock.release();
  }
}
