/** The many-account layout before schema 3, each account's own store, moved by the first run (docs/accounts.md, "Migrating"). */
import { existsSync } from 'node:fs';
import { readdir, rm, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { TransferSource } from '../store/account-transfer.js';
import { PARTITION_DIR_NAME, PENDING_FILE_NAME, TMP_FILE_NAME, type OutputFormat } from '../store/layout.js';
import { ACCOUNTS_DIR, legacyAccountDir, legacyAccountParquetDir } from './layout.js';

/** The accounts (of `names`) that still have a store of the old layout. */
export function legacyAccounts(root: string, names: readonly string[]): string[] {
  return names.filter((n) => existsSync(join(legacyAccountDir(root, n), 'sessions.duckdb')) || existsSync(join(legacyAccountDir(root, n), 'state.duckdb')));
}

/** The format the first old account found was written in: parquet for a state.duckdb, both with partitions, else duckdb. */
export function legacyFormat(root: string, names: readonly string[]): OutputFormat | undefined {
  for (const n of legacyAccounts(root, names)) {
    if (existsSync(join(legacyAccountDir(root, n), 'state.duckdb'))) return 'parquet';
    return existsSync(legacyAccountParquetDir(root, n)) ? 'both' : 'duckdb';
  }
  return undefined;
}

/** An account's old store as a source of a move (store/account-transfer.ts). */
export function legacySource(root: string, name: string): TransferSource {
  const dir = legacyAccountDir(root, name);
  const parquetOnly = existsSync(join(dir, 'state.duckdb')) && !existsSync(join(dir, 'sessions.duckdb'));
  return {
    describe: `${dir} (the layout before schema 3)`,
    dbPath: join(dir, parquetOnly ? 'state.duckdb' : 'sessions.duckdb'),
    format: parquetOnly ? 'parquet' : 'both',
    whole: true,
    pendingDir: join(dir, 'pending'),
    filesGlob: join(legacyAccountParquetDir(root, name), 'date=*', 'part-0.parquet'),
  };
}

/** Removes an account's old store and partitions once moved: only the files session-etl named. */
export async function removeLegacyAccount(root: string, name: string): Promise<void> {
  // Its partitions first, its DuckDB file last: until that is gone, the next run sees an account
  // still to migrate (and, the move being recorded in the new store, only finishes this removal).
  const parquet = legacyAccountParquetDir(root, name);
  for (const d of await readdir(parquet).catch(() => [] as string[])) {
    if (!PARTITION_DIR_NAME.test(d)) continue;
    await unlink(join(parquet, d, 'part-0.parquet')).catch(() => {});
    await rmdir(join(parquet, d)).catch(() => {});
  }
  await rmdir(parquet).catch(() => {});
  const dir = legacyAccountDir(root, name);
  for (const sub of ['.tmp', 'pending']) {
    for (const f of await readdir(join(dir, sub)).catch(() => [] as string[])) {
      if (TMP_FILE_NAME.test(f) || PENDING_FILE_NAME.test(f)) await unlink(join(dir, sub, f)).catch(() => {});
    }
    await rmdir(join(dir, sub)).catch(() => {});
  }
  await rm(join(dir, '.session-etl.lock'), { recursive: true, force: true });
  for (const f of ['state.json', 'sessions.duckdb.wal', 'state.duckdb.wal', 'sessions.duckdb', 'state.duckdb']) await unlink(join(dir, f)).catch(() => {});
  await rmdir(dir).catch(() => {});
  await rmdir(join(root, ACCOUNTS_DIR)).catch(() => {});
}
