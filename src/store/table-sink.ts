/**
 * Formats duckdb and both: a committed window's record file (listed in `_pending_files`) is the data;
 * merges move it into `sessions` in the background and at each flush; with both, their days go to Parquet.
 */
import { basename } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { memoryTraceOn, traced } from '../util/memory-trace.js';
import { BackgroundWork } from './background-work.js';
import { sizeOf } from './durable-fs.js';
import { queryRows, type Db } from './duckdb.js';
import { checkPartition, type StoreLayout } from './layout.js';
import { mergeSlice, type MergeContext } from './merge.js';
import { ndjsonFileValueBytes } from './row-groups.js';
import { ParquetRewriter, type RewriteOptions } from './parquet-rewriter.js';
import type { StoreShape } from './shape.js';
import type { Dataset } from './dataset/dataset.js';
import { addCounts, type AccountCounts, type FlushResult, type RecordFile, type Sink } from './sink.js';

const ALIGNED_WAIT_MS = 4_000;

/**
 * A many-account store rewrites its days in the run's last seconds, from a table not checkpointed,
 * whose WAL rows fill DuckDB's pool while each COPY sorts a day: before a rewrite of several days
 * with this much WAL, it checkpoints first: 200 × 2,000 peaked at 438–468 MiB instead of 480–546
 * (docs/benchmarks.md "Where the memory goes at 200 × 2,000").
 */
export const CHECKPOINT_BEFORE_REWRITE_WAL_BYTES = 4 * 2 ** 20;

export interface TableSinkOptions {
  format: 'duckdb' | 'both';
  /** Of the days waiting for a rewrite, those every account of the run covers whole. */
  readyDays: (conn: DuckDBConnection, partitions: string[]) => Promise<string[]>;
  onBackgroundError: (err: unknown) => void;
  /** How long committed rows wait for a whole row group before a background merge takes them anyway. */
  alignedWaitMs?: number | undefined;
  /** Told the finished days each background rewrite wrote. */
  onRewritten?: (partitions: string[]) => void;
  rewrites?: RewriteOptions;
  /** A many-account store's: see CHECKPOINT_BEFORE_REWRITE_WAL_BYTES. */
  checkpointFirst?: boolean;
  log?: (fields: object, msg: string) => void;
}

export class TableSink implements Sink {
  readonly keepsFiles = true;
  /** Rows of the record files committed and not merged yet: the memory trace's unmergedRows (util/memory-trace.ts). */
  private unmerged = 0;
  private readonly work: BackgroundWork;
  private readonly rewriter: ParquetRewriter | undefined;
  private readonly merge: MergeContext;
  private mergeConn: DuckDBConnection | undefined;
  private gen = 0;
  private lastMerge = Date.now();
  private kickTimer: NodeJS.Timeout | undefined;
  /** Whether beforeCommit sized the row groups already. */
  private sized = false;
  private readonly checkpointFirst: boolean;
  private readonly log: (fields: object, msg: string) => void;

  constructor(
    private readonly db: Db,
    private readonly layout: StoreLayout,
    shape: StoreShape,
    dataset: Dataset,
    o: TableSinkOptions,
  ) {
    const { readyDays, onBackgroundError, alignedWaitMs = ALIGNED_WAIT_MS, onRewritten = () => {} } = o;
    this.checkpointFirst = o.checkpointFirst === true;
    this.log = o.log ?? (() => {});
    const withParquet = o.format === 'both';
    this.rewriter = withParquet ? new ParquetRewriter(db, layout, shape, dataset, o.rewrites) : undefined;
    this.merge = { pendingDir: layout.pendingDir, rowGroupRows: db.rowGroupRows, shape, withParquet, runRowidFloor: undefined, nextGen: (c) => this.nextGen(c), ids: new Map() };
    const rewriter = this.rewriter;
    this.work = new BackgroundWork(
      {
        // Whole row groups when rows arrive fast enough to fill one within alignedWaitMs of the last
        // merge; otherwise what there is, so that a slow run's days still become readable as it goes.
        mergeSlice: async () => {
          // The rate counts from the last merge's start: rows committed while it ran arrived over its duration.
          const began = Date.now();
          const m = await mergeSlice(await this.mergeConnection(), this.merge, {
            waitForRowGroup: (pending, target) => {
              const elapsed = Date.now() - this.lastMerge;
              return elapsed < alignedWaitMs && (elapsed * target) / pending <= alignedWaitMs;
            },
          });
          if (m.waiting) this.kickLater(alignedWaitMs);
          else {
            this.lastMerge = began;
            this.tookOff(m.taken);
          }
          return m;
        },
        ...(rewriter
          ? {
              rewriteReady: async () => {
                const conn = (await rewriter.connections(1))[0]!;
                const written = await this.rewrite(rewriter, await readyDays(conn, await this.pendingPartitions(conn)));
                if (written.length) onRewritten(written);
                return written;
              },
            }
          : {}),
      },
      onBackgroundError,
    );
  }

  private tookOff(rows: number): void {
    this.unmerged = Math.max(0, this.unmerged - rows);
    if (memoryTraceOn) traced.unmergedRows = this.unmerged;
  }

  async commitFiles(c: DuckDBConnection, files: readonly RecordFile[]): Promise<void> {
    const values = files.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4})`).join(', ');
    await c.run(
      `INSERT INTO _pending_files (file, extracted_at, rows, account) VALUES ${values}`,
      files.flatMap((f) => [basename(f.path), f.extractedAt, f.count, f.account]),
    );
  }

  /**
   * A store with no rows yet sized its row groups for long text: at its first commit the files tell
   * the rows' size, and the file is attached again with the groups they fit, before any is written
   * (short records: several times larger groups). Runs before the commit's transaction, merges held
   * out; the re-attach waits for every statement on the store's connections (read-gate.ts).
   */
  async beforeCommit(files: readonly RecordFile[]): Promise<void> {
    if (this.sized) return;
    this.sized = true;
    const fit = this.db.fitRowGroups;
    if (!fit) return;
    if (files.reduce((n, f) => n + f.count, 0) === 0) return;
    const any = await queryRows<{ n: bigint }>(this.db.conn, 'SELECT count(*) AS n FROM (SELECT 1 FROM sessions LIMIT 1)');
    if (Number(any[0]?.n ?? 0) > 0) return;
    const rowBytes = await ndjsonFileValueBytes(files[0]!.path);
    if (rowBytes === undefined) return;
    await this.work.merging(async () => {
      await fit(rowBytes);
      this.merge.rowGroupRows = this.db.rowGroupRows;
      delete this.merge.groupBase;
    });
  }

  async afterCommit(files: readonly RecordFile[]): Promise<void> {
    for (const f of files) this.unmerged += f.count;
    if (memoryTraceOn) traced.unmergedRows = this.unmerged;
    this.work.kick();
  }

  async pendingPartitions(conn: DuckDBConnection): Promise<string[]> {
    if (!this.rewriter) return [];
    return (await queryRows<{ p: string }>(conn, 'SELECT DISTINCT partition AS p FROM _parquet_pending ORDER BY 1')).map((r) =>
      checkPartition(r.p, `${this.layout.dbPath} (_parquet_pending)`),
    );
  }

  /**
   * Marks the start of a run for the new/updated counts: a session stored before this counts as
   * updated when replaced; one stored after it counts once, however many windows return it. (DuckDB's
   * own checkpoint, once per 1 GB of WAL, renumbers row ids: such a run may count a few twice.)
   */
  async beginRunCounts(): Promise<void> {
    await this.work.merging(async () => {
      const c = await this.mergeConnection();
      const r = await queryRows<{ m: bigint }>(c, 'SELECT coalesce(max(rowid), -1) AS m FROM sessions');
      this.merge.runRowidFloor = BigInt(r[0]?.m ?? -1n);
      if (memoryTraceOn) {
        // What is pending already (left by an earlier run, or moved in before the run) is counted too.
        const p = await queryRows<{ n: bigint | number }>(c, 'SELECT coalesce(sum(rows), 0) AS n FROM _pending_files');
        this.unmerged = Number(p[0]?.n ?? 0);
      }
    });
  }

  async flush(): Promise<FlushResult> {
    const merged = await this.mergePending();
    const rewriter = this.rewriter;
    const partitions = rewriter ? await this.work.rewriting(async () => this.rewrite(rewriter, await this.pendingPartitions(this.db.conn))) : [];
    const result = this.work.takeResult();
    addCounts(result.counts, merged);
    result.partitions.push(...partitions);
    return result;
  }

  private async rewrite(rewriter: ParquetRewriter, days: string[]): Promise<string[]> {
    await this.checkpointBeforeRewrite(days);
    return rewriter.rewritePending(days);
  }

  /**
   * CHECKPOINT before a rewrite of `days` (CHECKPOINT_BEFORE_REWRITE_WAL_BYTES), between merges. It
   * vacuums deleted rows and renumbers the rest: the run's row id floor is found again (the row id of
   * the last row stored before the run), and the alignment read again. Refused while another
   * connection writes: the rewrite goes on, and the closing checkpoint does the work.
   */
  private async checkpointBeforeRewrite(days: readonly string[]): Promise<void> {
    if (!this.checkpointFirst || days.length < 2) return;
    const walBytes = () => sizeOf(`${this.db.path}.wal`);
    const wal = await walBytes();
    if (wal < CHECKPOINT_BEFORE_REWRITE_WAL_BYTES) return;
    await this.work.merging(async () => {
      const c = await this.mergeConnection();
      const floor = this.merge.runRowidFloor;
      const before =
        floor === undefined ? 0n : BigInt((await queryRows<{ n: bigint }>(c, `SELECT count(*) AS n FROM sessions WHERE rowid <= ${floor}`))[0]!.n);
      try {
        await c.run('CHECKPOINT');
      } catch (err) {
        this.log({ walBytes: wal, days: days.length, err: (err as Error).message }, 'no checkpoint before the Parquet rewrite');
        return;
      }
      if (floor !== undefined) {
        const last =
          before === 0n ? [{ r: -1n }] : await queryRows<{ r: bigint }>(c, `SELECT rowid AS r FROM sessions ORDER BY rowid LIMIT 1 OFFSET ${before - 1n}`);
        this.merge.runRowidFloor = BigInt(last[0]?.r ?? -1n);
      }
      delete this.merge.groupBase;
      this.log(
        { walBytes: wal, walBytesAfter: await walBytes(), days: days.length, runRowidFloor: String(floor), runRowidFloorAfter: String(this.merge.runRowidFloor) },
        `checkpointed the store before rewriting ${days.length} Parquet days`,
      );
    });
  }

  stop(): void {
    this.work.stop();
    clearTimeout(this.kickTimer);
  }

  /** Rows wait for a row group: merge them anyway once alignedWaitMs has passed, even if no commit comes. */
  private kickLater(alignedWaitMs: number): void {
    if (this.kickTimer) return;
    this.kickTimer = setTimeout(() => {
      this.kickTimer = undefined;
      this.work.kick();
    }, Math.max(0, this.lastMerge + alignedWaitMs - Date.now()) + 10);
    this.kickTimer.unref();
  }

  idle(): Promise<void> {
    return this.work.idle();
  }

  closeConnections(): void {
    clearTimeout(this.kickTimer);
    this.mergeConn?.closeSync();
    this.rewriter?.closeConnections();
  }

  private mergePending(): Promise<AccountCounts> {
    return this.work.merging(async () => {
      const total: AccountCounts = new Map();
      const conn = await this.mergeConnection();
      for (;;) {
        const m = await mergeSlice(conn, this.merge);
        this.tookOff(m.taken);
        addCounts(total, m.counts);
        if (!m.more) return total;
      }
    });
  }

  async nextGen(c: DuckDBConnection): Promise<bigint> {
    if (this.gen === 0) {
      this.gen = Number((await queryRows<{ g: bigint | null }>(c, 'SELECT coalesce(max(gen), 0) AS g FROM _parquet_pending'))[0]?.g ?? 0);
    }
    return BigInt(++this.gen);
  }

  private async mergeConnection(): Promise<DuckDBConnection> {
    this.mergeConn ??= await this.db.instance.connect();
    return this.mergeConn;
  }
}
