/**
 * Format parquet: no sessions table. A commit loads a window's records into `_pending_rows` (with
 * its coverage, in one transaction); a flush merges each pending partition's rows with the
 * partition's old file into a new file, newest version of each session first.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from './duckdb.js';
import { exists } from './durable-fs.js';
import { wrapWriteError } from './errors.js';
import { PARTITION_FILE, partitionDir, type StoreLayout } from './layout.js';
import { NDJSON_COLUMNS, NDJSON_MAX_OBJECT_BYTES, NDJSON_SELECT } from './ndjson.js';
import { placePartitionFile } from './parquet-rewriter.js';
import { COLUMN_LIST, CONTENT_HASH } from './schema.js';
import type { SerialQueue } from './serial-queue.js';
import type { FlushResult, RecordFile, Sink } from './sink.js';

export class ParquetOnlySink implements Sink {
  readonly keepsFiles = false;
  private fileSeq = 0;

  constructor(
    /** The store's main connection, and the queue that serialises writes on it. */
    private readonly conn: DuckDBConnection,
    private readonly writes: SerialQueue,
    private readonly layout: StoreLayout,
  ) {}

  async commitFiles(c: DuckDBConnection, files: readonly RecordFile[]): Promise<void> {
    // DuckDB parses the records itself, with explicit types (the scanner checked them).
    const list = files.map((f) => sqlString(f.path)).join(', ');
    const lineage = files.map((f) => `(${sqlString(f.path)}, ${f.extractedAt})`).join(', ');
    await c.run(
      `INSERT INTO _pending_rows SELECT ${NDJSON_SELECT}
       FROM read_json([${list}], columns = ${NDJSON_COLUMNS}, format = 'newline_delimited', maximum_object_size = ${NDJSON_MAX_OBJECT_BYTES}, filename = true) r
       JOIN (VALUES ${lineage}) f(filename, extracted) USING (filename)`,
    );
  }

  /**
   * The rows are in _pending_rows now: the files were only the way in. Removed all at once, as a
   * merge removes its files (merge.ts): one after the other, each removal waits for turns of the
   * event loop the fetching keeps busy, and the next commit waits for this.
   */
  async afterCommit(files: readonly RecordFile[]): Promise<void> {
    await Promise.all(files.map((f) => rm(f.path, { force: true }).catch(() => {})));
  }

  async pendingPartitions(conn: DuckDBConnection): Promise<string[]> {
    return (await queryRows<{ p: string }>(conn, 'SELECT DISTINCT partition AS p FROM _pending_rows ORDER BY 1')).map((r) => r.p);
  }

  async beginRunCounts(): Promise<void> {}

  /** Pending rows merged with each partition's old file. */
  flush(): Promise<FlushResult> {
    return this.writes.run(async () => {
      const result: FlushResult = { partitions: [], inserted: 0, updated: 0, unchanged: 0 };
      for (const p of await this.pendingPartitions(this.conn)) {
        const counts = await this.rewritePartition(p);
        await this.conn.run(`DELETE FROM _pending_rows WHERE partition = ${sqlString(p)}`);
        result.partitions.push(p);
        result.inserted += counts.inserted;
        result.updated += counts.updated;
        result.unchanged += counts.unchanged;
      }
      return result;
    });
  }

  stop(): void {}

  async idle(): Promise<void> {}

  closeConnections(): void {}

  private async rewritePartition(p: string): Promise<{ inserted: number; updated: number; unchanged: number }> {
    const c = this.conn;
    const dir = partitionDir(this.layout.parquetDir, p);
    const final = join(dir, PARTITION_FILE);
    const tmp = join(this.layout.tmpDir, `${p}-${process.pid}-${++this.fileSeq}.parquet`);
    let inserted = 0;
    let updated = 0;
    let unchanged = 0;
    const hasOld = await exists(final);
    const pending = `SELECT ${COLUMN_LIST}, 0 AS src FROM _pending_rows WHERE partition = ${sqlString(p)}`;
    const all = hasOld ? `${pending} UNION ALL SELECT ${COLUMN_LIST}, 1 AS src FROM read_parquet(${sqlString(final)})` : pending;
    const source = `SELECT ${COLUMN_LIST} FROM (${all}) QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY extracted_at DESC, src) = 1`;
    if (hasOld) {
      // A session in the old file is replaced: updated when its content (any column but
      // extracted_at) differs from the newest pending version, else re-read unchanged.
      const r = await queryRows<{ n: bigint; u: bigint; same: bigint }>(
        c,
        `WITH p AS (SELECT session_id, ${CONTENT_HASH} AS h FROM _pending_rows WHERE partition = ${sqlString(p)}
                    QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY extracted_at DESC) = 1),
              o AS (SELECT session_id, ${CONTENT_HASH} AS h FROM read_parquet(${sqlString(final)}))
         SELECT count(*) AS n, count(o.session_id) AS u, count(*) FILTER (WHERE o.h = p.h) AS same FROM p LEFT JOIN o USING (session_id)`,
      );
      unchanged = Number(r[0]?.same ?? 0);
      updated = Number(r[0]?.u ?? 0) - unchanged;
      inserted = Number(r[0]?.n ?? 0) - updated - unchanged;
    } else {
      const r = await queryRows<{ n: bigint }>(c, `SELECT count(DISTINCT session_id) AS n FROM _pending_rows WHERE partition = ${sqlString(p)}`);
      inserted = Number(r[0]?.n ?? 0);
    }
    let copied: { rowsChanged: number | bigint };
    try {
      copied = await c.run(
        `COPY (${source} ORDER BY started_at, session_id) TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)`,
      );
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw wrapWriteError(err, `rewriting Parquet partition date=${p}`);
    }
    await placePartitionFile(Number(copied.rowsChanged), tmp, dir, final, p);
    return { inserted, updated, unchanged };
  }
}
