/**
 * `session-etl accounts adopt NAME`: moves a single-account data directory's data under an account
 * name, in place, without fetching anything again (docs/accounts.md):
 *   sessions.duckdb | state.duckdb (+ .wal), state.json  →  accounts/NAME/
 *   parquet/sessions/date=*                              →  parquet/sessions/account=NAME/date=*
 * Every step is a rename on the same file system. It holds the data directory's lock meanwhile (no
 * run can start), and refuses while committed rows still wait in pending/ (an export merges them).
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/errors.js';
import { ACCOUNT_NAME } from '../config/schema.js';
import { fsyncDir } from '../store/durable-fs.js';
import { DIR_MODE, layoutOf, PARTITION_DIR_NAME, refuseLinks } from '../store/layout.js';
import { acquireLock } from '../store/lock.js';
import { accountDataDir, accountParquetDir, datasetRoot } from './layout.js';

export interface AdoptResult {
  account: string;
  moved: string[];
  partitions: number;
}

export async function adoptDataDir(root: string, name: string): Promise<AdoptResult> {
  if (!ACCOUNT_NAME.test(name)) {
    throw new ConfigError(`${JSON.stringify(name)} cannot be an account name: 1 to 63 characters of a-z, 0-9, _ and -, starting with a letter or digit`);
  }
  const files = ['sessions.duckdb', 'state.duckdb'].filter((f) => existsSync(join(root, f)));
  if (!files.length) throw new ConfigError(`no single-account data in ${root} (no sessions.duckdb or state.duckdb): nothing to adopt`);
  const target = accountDataDir(root, name);
  const parquetTarget = accountParquetDir(root, name);
  if (existsSync(target) || existsSync(parquetTarget)) {
    throw new ConfigError(`account ${name} already has data in ${root} (${existsSync(target) ? target : parquetTarget}): choose another name`);
  }
  await refuseLinks(root);
  const single = layoutOf(root, 'both');
  const lock = await acquireLock(single.lockPath, { command: `accounts adopt ${name}` });
  const moved: string[] = [];
  let partitions = 0;
  try {
    const pending = await readdir(single.pendingDir).catch(() => [] as string[]);
    if (pending.length) {
      throw new ConfigError(
        `${single.pendingDir} holds committed rows not merged yet: run \`session-etl export\` (or any run) once on ${root} without accounts, then adopt`,
      );
    }
    await mkdir(target, { recursive: true, mode: DIR_MODE });
    for (const f of [...files.flatMap((f) => [f, `${f}.wal`]), 'state.json']) {
      if (!existsSync(join(root, f))) continue;
      await rename(join(root, f), join(target, f));
      moved.push(f);
    }
    await fsyncDir(target);
    const dataset = datasetRoot(root);
    const dates = (await readdir(dataset).catch(() => [] as string[])).filter((d) => PARTITION_DIR_NAME.test(d));
    if (dates.length) {
      await mkdir(parquetTarget, { recursive: true, mode: DIR_MODE });
      for (const d of dates) await rename(join(dataset, d), join(parquetTarget, d));
      partitions = dates.length;
      await fsyncDir(parquetTarget);
      await fsyncDir(dataset);
    }
    // The single-account temporary directory: our own files only (a run recreates it per account).
    await rm(single.tmpDir, { recursive: true, force: true }).catch(() => {});
    await rmdir(single.pendingDir).catch(() => {});
    await fsyncDir(root);
  } finally {
    await lock.release();
  }
  return { account: name, moved, partitions };
}
