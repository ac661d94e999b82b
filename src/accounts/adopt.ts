/**
 * `session-etl accounts adopt NAME`: makes a single-account data directory's store the store of
 * many accounts, holding this one, in place and without fetching anything again (docs/accounts.md):
 * in one transaction every state row becomes the account's and the sessions table gains the
 * `account` column; then every day's Parquet file is rewritten with it (each replaced whole, by a
 * rename). It holds the data directory's lock meanwhile (no run can start). Cut short, the next run
 * (with the accounts map) finishes the rewrites.
 */
import { ConfigError } from '../config/errors.js';
import { ACCOUNT_NAME } from '../config/schema.js';
import { layoutOf, refuseLinks } from '../store/layout.js';
import { acquireLock } from '../store/lock.js';
import { SessionStore } from '../store/session-store.js';
import { topStoreExists } from './stores.js';

export interface AdoptResult {
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
      const rows = many.format === 'parquet' ? null : await countOf(many);
      return { account: name, sessions: rows, partitions: flushed.partitions.length };
    } finally {
      await many.close();
    }
  } finally {
    await lock.release();
  }
}

async function countOf(store: SessionStore): Promise<number> {
  const r = await store.conn.runAndReadAll('SELECT count(*) AS n FROM sessions');
  return Number((r.getRowObjectsJS()[0] as { n: bigint }).n);
}
