/** Where a store's day files go: the local directory (here) or a bucket (s3-dataset.ts); nothing above the store knows which. */
import { join } from 'node:path';
import { exists } from '../durable-fs.js';
import { isPartition, partitionDir } from '../layout.js';
import { placePartitionFile } from '../place-partition-file.js';
import type { DatasetLocation } from './location.js';

export interface Dataset {
  readonly location: DatasetLocation;
  /** For messages. */
  readonly describe: string;
  /** Puts (consumes) a complete local file as the store's file of a day (removes it when `rows` is 0); readers see either whole. */
  put(partition: string, localFile: string, rows: number): Promise<void>;
  /** The store's file of a day as a local path to read, or null when there is none; `done()` when read. */
  read(partition: string): Promise<{ path: string; done(): Promise<void> } | null>;
  /** partition → bytes. */
  list(): Promise<Map<string, number>>;
  close(): void;
}

/** A store's files in the data directory's own parquet/sessions/ (renamed into place, fsynced). */
export class LocalDataset implements Dataset {
  readonly describe: string;
  constructor(
    readonly location: Extract<DatasetLocation, { kind: 'local' }>,
    /** part-0.parquet, part-I-of-N.parquet. */
    private readonly fileName: string,
  ) {
    this.describe = location.root;
  }

  async put(partition: string, localFile: string, rows: number): Promise<void> {
    const dir = partitionDir(this.location.root, partition);
    await placePartitionFile(rows, localFile, dir, join(dir, this.fileName), partition);
  }

  async read(partition: string): Promise<{ path: string; done(): Promise<void> } | null> {
    const path = join(partitionDir(this.location.root, partition), this.fileName);
    return (await exists(path)) ? { path, done: async () => {} } : null;
  }

  async list(): Promise<Map<string, number>> {
    const { readdir, stat } = await import('node:fs/promises');
    const out = new Map<string, number>();
    for (const d of await readdir(this.location.root).catch(() => [] as string[])) {
      const m = /^date=(.+)$/.exec(d);
      if (!m || !isPartition(m[1])) continue;
      const st = await stat(join(this.location.root, d, this.fileName)).catch(() => undefined);
      if (st?.isFile()) out.set(m[1]!, st.size);
    }
    return out;
  }

  close(): void {}
}
