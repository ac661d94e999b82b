/**
 * <data-dir>/all-accounts.duckdb: only the view `sessions` over the whole Parquet dataset, for DuckDB
 * users to query every account; it never goes stale and no run holds it. Rewritten by each many-account
 * run to a temporary file renamed over the old one, so a reader never opens a half-written file.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { openDb, sqlString } from '../store/duckdb.js';
import { fsyncDir, fsyncFile } from '../store/durable-fs.js';
import { ALL_ACCOUNTS_DB, allAccountsGlob, datasetRoot } from './layout.js';

/** The view's SQL (also what docs/accounts.md shows for a session of one's own). */
export function allAccountsViewSql(root: string): string {
  return (
    `CREATE OR REPLACE VIEW sessions AS SELECT * FROM read_parquet(${sqlString(allAccountsGlob(resolve(root)))}, ` +
    `hive_partitioning = true, hive_types = {'date': DATE}, union_by_name = true)`
  );
}

/** Writes the file; returns its path, or null while no account has a Parquet partition yet (a view over nothing cannot be made). */
export async function writeAllAccountsView(root: string): Promise<string | null> {
  if (!(await anyPartition(root))) return null;
  const final = join(root, ALL_ACCOUNTS_DB);
  // Unique across hosts and pods (in a container every process is pid 1): shards on one shared volume write it at the same time.
  const tmp = join(root, `.${ALL_ACCOUNTS_DB}.${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  await rm(tmp, { force: true });
  await rm(`${tmp}.wal`, { force: true });
  const db = await openDb(tmp, { allowedDirectories: [root] });
  try {
    await db.conn.run(allAccountsViewSql(root));
    await db.conn.run('CHECKPOINT');
  } finally {
    await db.close();
  }
  await rm(`${tmp}.wal`, { force: true });
  await fsyncFile(tmp, { restrictMode: true });
  await rename(tmp, final);
  await fsyncDir(root);
  return final;
}

async function anyPartition(root: string): Promise<boolean> {
  const top = datasetRoot(root);
  for (const d of await readdir(top).catch(() => [] as string[])) {
    if (d.startsWith('date=') && (await readdir(join(top, d)).catch(() => [] as string[])).some((f) => f.endsWith('.parquet'))) return true;
  }
  return false;
}
