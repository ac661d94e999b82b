import { mkdir, rename, rm, rmdir } from 'node:fs/promises';
import { crashPoint } from '../util/crash-point.js';
import { fsyncDir, fsyncFile } from './durable-fs.js';
import { wrapWriteError } from './errors.js';
import { DIR_MODE } from './layout.js';

/** Puts a day's new file (in .tmp) in place locally: fsync, rename over the old, fsync the directory; none left: removed. */
export async function placePartitionFile(rows: number, tmp: string, dir: string, final: string, p: string): Promise<void> {
  try {
    if (rows === 0) {
      await rm(tmp, { force: true });
      // Our file only: the directory goes when nothing else is in it.
      await rm(final, { force: true });
      await rmdir(dir).catch(() => {});
      return;
    }
    await fsyncFile(tmp, { restrictMode: true });
    crashPoint('mid-parquet-rewrite');
    await mkdir(dir, { recursive: true, mode: DIR_MODE });
    await rename(tmp, final);
    await fsyncDir(dir);
    crashPoint('after-parquet-rename');
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    throw wrapWriteError(err, `rewriting Parquet partition date=${p}`);
  }
}
