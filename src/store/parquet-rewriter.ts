/** Rewriting Parquet days whole from the sessions table (format both): COPY to .tmp, put in place, marks cleared. */
import { rm } from 'node:fs/promises';
import { parquetCopyOptions } from './row-groups.js';
import { join } from 'node:path';
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import pLimit from 'p-limit';
import { unguessable } from '../util/temp-file.js';
import { queryRows, sqlString, type Db } from './duckdb.js';
import { wrapWriteError } from './errors.js';
import type { Dataset } from './dataset/dataset.js';
import { NULL_PARTITION, type StoreLayout } from './layout.js';
import type { StoreShape } from './shape.js';

/** Rewrites side by side (a COPY is mostly one thread), unless the memory budget says fewer (MemorySplit.parquetRewrites). */
export const REWRITE_CONNECTIONS = 2;

/** How rewrites run: side by side at most `sideBySide`; `log` is told each rewrite of several days. */
export interface RewriteOptions {
  sideBySide: number;
  log?: (fields: object, msg: string) => void;
}

export class ParquetRewriter {
  private extra: DuckDBConnection[] = [];
  private copying = new Map<string, Promise<unknown>>();
  private fileSeq = 0;

  constructor(
    private readonly db: Db,
    private readonly layout: StoreLayout,
    private readonly shape: StoreShape,
    private readonly dataset: Dataset,
    private readonly rewrites: RewriteOptions = { sideBySide: REWRITE_CONNECTIONS },
  ) {}

  /** Rewrites the partitions side by side; a file's fsync and rename run during the next COPY. Returns them all, or throws. */
  async rewritePending(partitions: string[]): Promise<string[]> {
    if (partitions.length === 0) return [];
    const conns = await this.connections(Math.max(1, Math.min(this.rewrites.sideBySide, partitions.length)));
    // The marks as they stand before any COPY: each COPY then reads at least the data they stand for.
    const seen = await queryRows<{ p: string; g: bigint | number }>(
      conns[0]!,
      `SELECT partition AS p, max(gen) AS g FROM _parquet_pending WHERE partition IN (SELECT unnest($1::VARCHAR[])) GROUP BY 1`,
      [listValue(partitions)],
    );
    const gens = new Map(seen.map((r) => [r.p, Number(r.g)]));
    const done: string[] = [];
    const finishing: Array<Promise<void>> = [];
    let failure: unknown;
    // One COPY a connection at a time; after a failure, none more starts.
    const free = [...conns];
    const limit = pLimit(conns.length);
    let running = 0;
    let most = 0;
    await Promise.all(
      partitions.map((p) =>
        limit(async () => {
          if (failure !== undefined) return;
          const conn = free.pop()!;
          most = Math.max(most, ++running);
          try {
            const finish = this.copyPartition(conn, p).then((fin) => fin());
            // The COPY itself is awaited here; the rest (fsync, rename) runs on.
            finishing.push(finish.then(() => void done.push(p), (err: unknown) => void (failure ??= err)));
            await this.copying.get(p);
          } catch (err) {
            failure ??= err;
          } finally {
            running--;
            free.push(conn);
          }
        }),
      ),
    );
    await Promise.all(finishing);
    if (partitions.length > 1) {
      this.rewrites.log?.(
        { partitions: partitions.length, copiesAtOnce: most, sideBySide: this.rewrites.sideBySide },
        `${partitions.length} Parquet days rewritten, ${most} at a time at most (the memory budget allows ${this.rewrites.sideBySide})`,
      );
    }
    const cleared = done.filter((p) => gens.has(p));
    if (cleared.length) {
      // Only the marks seen above: a merge committed since then keeps its mark, and its rows are
      // written by the next rewrite.
      await conns[0]!.run(
        `DELETE FROM _parquet_pending USING (SELECT unnest($1::VARCHAR[]) AS p, unnest($2::BIGINT[]) AS g) seen
         WHERE _parquet_pending.partition = seen.p AND _parquet_pending.gen <= seen.g`,
        [listValue(cleared), listValue(cleared.map((p) => BigInt(gens.get(p)!)))],
      );
    }
    if (failure !== undefined) throw failure;
    return partitions;
  }

  /** The first `n` of the rewriter's own connections (opened on first use). */
  async connections(n: number): Promise<DuckDBConnection[]> {
    while (this.extra.length < n) this.extra.push(await this.db.instance.connect());
    return this.extra.slice(0, Math.max(0, n));
  }

  closeConnections(): void {
    for (const conn of this.extra) conn.closeSync();
  }

  /** COPY one partition to .tmp (an unguessable name); resolves to the step that puts the file in place. */
  private copyPartition(c: DuckDBConnection, p: string): Promise<() => Promise<void>> {
    const tmp = join(this.layout.tmpDir, `${p}-${process.pid}-${++this.fileSeq}-${unguessable()}.parquet`);
    const copy = c.run(
      `COPY (SELECT ${this.shape.columnList} FROM sessions WHERE ${partitionPredicate(p)} ORDER BY ${this.shape.fileOrder})
       TO ${sqlString(tmp)} (${parquetCopyOptions(this.db.rowGroupRows)})`,
    );
    this.copying.set(p, copy.catch(() => {}));
    return copy.then(
      (copied) => async () => {
        this.copying.delete(p);
        await this.dataset.put(p, tmp, Number(copied.rowsChanged));
      },
      async (err: unknown) => {
        this.copying.delete(p);
        await rm(tmp, { force: true }).catch(() => {});
        throw wrapWriteError(err, `rewriting Parquet partition date=${p}`);
      },
    );
  }
}

function partitionPredicate(p: string): string {
  if (p === NULL_PARTITION) return 'started_at IS NULL';
  return `started_at >= TIMESTAMPTZ ${sqlString(`${p} 00:00:00+00`)} AND started_at < TIMESTAMPTZ ${sqlString(`${p} 00:00:00+00`)} + INTERVAL 1 DAY`;
}
