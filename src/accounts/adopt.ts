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

/** Thrown when a move fails part way: what was moved is moved back (or, if that fails too, named). */
export class AdoptError extends Error {
  override readonly name = 'AdoptError';
}

export async function adoptDataDir(root: string, name: string, o: { rename?: typeof rename } = {}): Promise<AdoptResult> {
  const mv = o.rename ?? rename;
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
  // Every rename done, in order, so that a failure part way can undo them (last first).
  const done: Array<[from: string, to: string]> = [];
  const move = async (from: string, to: string) => {
    await mv(from, to);
    done.push([from, to]);
  };
  let partitions = 0;
  try {
    const pending = await readdir(single.pendingDir).catch(() => [] as string[]);
    if (pending.length) {
      throw new ConfigError(
        `${single.pendingDir} holds committed rows not merged yet: run \`session-etl export\` (or any run) once on ${root} without accounts, then adopt`,
      );
    }
    try {
      await mkdir(target, { recursive: true, mode: DIR_MODE });
      for (const f of [...files.flatMap((f) => [f, `${f}.wal`]), 'state.json']) {
        if (!existsSync(join(root, f))) continue;
        await move(join(root, f), join(target, f));
        moved.push(f);
      }
      await fsyncDir(target);
      const dataset = datasetRoot(root);
      const dates = (await readdir(dataset).catch(() => [] as string[])).filter((d) => PARTITION_DIR_NAME.test(d));
      if (dates.length) {
        await mkdir(parquetTarget, { recursive: true, mode: DIR_MODE });
        for (const d of dates) await move(join(dataset, d), join(parquetTarget, d));
        partitions = dates.length;
        await fsyncDir(parquetTarget);
        await fsyncDir(dataset);
      }
    } catch (err) {
      throw await rollBack(root, name, done, [parquetTarget, target], err, mv);
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

/** Moves back what was moved (last first) and removes the directories made for it; the error to throw. */
async function rollBack(root: string, name: string, done: Array<[string, string]>, made: string[], cause: unknown, mv: typeof rename): Promise<AdoptError> {
  const why = (cause as Error).message;
  const stuck: string[] = [];
  for (const [from, to] of [...done].reverse()) {
    try {
      await mv(to, from);
    } catch {
      stuck.push(`${to} (belongs at ${from})`);
    }
  }
  if (!stuck.length) {
    for (const dir of made) await rmdir(dir).catch(() => {});
    await rmdir(join(root, 'accounts')).catch(() => {});
    await fsyncDir(root).catch(() => {});
    return new AdoptError(`accounts adopt ${name} failed part way (${why}); everything moved was moved back, ${root} is as before: fix the cause and run it again`, { cause });
  }
  return new AdoptError(
    `accounts adopt ${name} failed part way (${why}), and ${stuck.length} item(s) could not be moved back: ${stuck.join(', ')}; move them back by hand before any run`,
    { cause },
  );
}
