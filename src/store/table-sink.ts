/**
 * Formats duckdb and both: a committed window's record file is the committed data (listed in
 * `_pending_files` by the commit); merges move the files' rows into the `sessions` table in the
 * background and at each flush; with both, the days they touch are then rewritten to Parquet.
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

/** How long committed rows wait for a whole row group's worth before a background merge takes them anyway. */
const ALIGNED_WAIT_MS = 4_000;

/**
 * A many-account store rewrites its days when every account of the run covers them: all of them in
 * the run's last seconds, from a table the run has not checkpointed (duckdb.ts), whose rows then
 * fill DuckDB's pool while each COPY sorts a day. Before such a rewrite of several days, with at
 * least this much in the write-ahead log, the table is checkpointed first (the work the closing
 * checkpoint would do): 200 accounts × 2,000 sessions peaked at 438–468 MiB instead of 480–546
 * (docs/benchmarks.md "Where the memory goes at 200 × 2,000").
 */
export const CHECKPOINT_BEFORE_REWRITE_WAL_BYTES = 4 * 2 ** 20;

export interface TableSinkOptions {
  /** both: the days merges touch are rewritten to Parquet; duckdb: the table only. */
  format: 'duckdb' | 'both';
  /** Of the days waiting for a rewrite, those whose data is complete (every account of the run covers them whole). */
  readyDays: (conn: DuckDBConnection, partitions: string[]) => Promise<string[]>;
  onBackgroundError: (err: unknown) => void;
  /** How long committed rows wait for a whole row group (default ALIGNED_WAIT_MS). */
  alignedWaitMs?: number | undefined;
  /** Told the finished days each background rewrite wrote (none: not called). */
  onRewritten?: (partitions: string[]) => void;
  /** How many Parquet rewrites run side by side (the memory budget's). */
  rewrites?: RewriteOptions;
  /** Checkpoint before a rewrite of several days (a many-account store: CHECKPOINT_BEFORE_REWRITE_WAL_BYTES). */
  checkpointFirst?: boolean;
  /** Told what checkpointFirst did (debug). */
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
  /** Whether the row groups were sized from the rows (at the first commit of a store that held none). */
  private sized = false;
  private readonly checkpointFirst: boolean;
  private readonly log: (fields: object, msg: string) => void;

  constructor(
    private readonly db: Db,
    private readonly layout: StoreLayout,
    shape: StoreShape,
    /** Where the day files go (format both). */
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
        // In the background, whole row groups when rows arrive fast enough to fill one within
        // ALIGNED_WAIT_MS of the last merge; otherwise what there is, so that a slow run still makes
        // its days readable as it goes. The flush merges what is left.
        mergeSlice: async () => {
          // The rate counts from the start of the last merge: rows committed while it ran arrived over its duration.
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
                const days = await readyDays(conn, await this.pendingPartitions(conn));
                await this.checkpointBeforeRewrite(days);
                const written = await rewriter.rewritePending(days);
                if (written.length) onRewritten(written);
                return written;
              },
            }
          : {}),
      },
      onBackgroundError,
    );
  }

  /** A merge took `rows` of the pending files' rows into the table. */
  private tookOff(rows: number): void {
    this.unmerged = Math.max(0, this.unmerged - rows);
    if (memoryTraceOn) traced.unmergedRows = this.unmerged;
  }

  async commitFiles(c: DuckDBConnection, files: readonly RecordFile[]): Promise<void> {
    // The files are the rows: the merge reads them (DuckDB parses them, with explicit types).
    const values = files.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4})`).join(', ');
    await c.run(
      `INSERT INTO _pending_files (file, extracted_at, rows, account) VALUES ${values}`,
      files.flatMap((f) => [basename(f.path), f.extractedAt, f.count, f.account]),
    );
  }

  /**
   * A store that holds no rows yet could not measure them when it was opened (store/row-groups.ts):
   * its row groups were sized for long text. At its first commit, the files committed tell the rows'
   * size (the bytes of their values: row-groups.ts ndjsonValueBytes), and the file is attached again with the row groups those rows
   * fit, before any row group is written: short records get groups several times larger (a smaller
   * file, a faster run), long text keeps small ones. Runs on the commit's connection before its
   * transaction, with merges held out (they keep the row group size in this.merge); the re-attach
   * itself waits for every other statement and transaction on the store's connections to end, and
   * holds new ones until it is done (the Db's gate: store/read-gate.ts).
   */
  async beforeCommit(files: readonly RecordFile[]): Promise<void> {
    if (this.sized) return;
    this.sized = true;
    const fit = this.db.fitRowGroups;
    if (!fit) return;
    if (files.reduce((n, f) => n + f.count, 0) === 0) return;
    const any = await queryRows<{ n: bigint }>(this.db.conn, 'SELECT count(*) AS n FROM (SELECT 1 FROM sessions LIMIT 1)');
    if (Number(any[0]?.n ?? 0) > 0) return;
    // The values' bytes of the first window's records (a sample of its first megabytes).
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
   * Marks the start of a run for the new/updated counts: a session whose stored version predates
   * this call counts as updated when replaced; one first stored after it counts once, as new or
   * updated, however many windows return it. (Row ids are renumbered by a checkpoint that drops
   * deleted rows, which DuckDB runs at most once per 1 GB of WAL: a run that long may count a few
   * sessions twice; the data is not affected.)
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

  /**
   * Merges every committed row into the sessions table, then (format both) rewrites every pending
   * Parquet partition whole. Also returns what background work did since the last flush.
   */
  async flush(): Promise<FlushResult> {
    const merged = await this.mergePending();
    const rewriter = this.rewriter;
    const partitions = rewriter
      ? await this.work.rewriting(async () => {
          const days = await this.pendingPartitions(this.db.conn);
          await this.checkpointBeforeRewrite(days);
          return rewriter.rewritePending(days);
        })
      : [];
    const result = this.work.takeResult();
    addCounts(result.counts, merged);
    result.partitions.push(...partitions);
    return result;
  }

  /**
   * CHECKPOINT before a rewrite of `days` (see CHECKPOINT_BEFORE_REWRITE_WAL_BYTES), between merges.
   * A checkpoint vacuums deleted rows (a session a later window returned again replaced its row) and
   * renumbers the rows after them, and a merge tells a session stored before the run from one this
   * run stored by its row id (merge.ts, runRowidFloor): the run's floor is found again after it, as
   * the row id of the last row stored before the run (the order of the rows is kept), and the row
   * group alignment is read again. Refused by DuckDB while another connection writes (a commit): the
   * rewrite goes on, and the closing checkpoint does the work.
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

  /** Rows wait for a row group: merge them anyway once ALIGNED_WAIT_MS has passed, even if no commit comes. */
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

  /** Moves every committed row into the sessions table, slice by slice (see merge.ts). */
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

  /** A generation number for Parquet marks, above every one already stored. */
  async nextGen(c: DuckDBConnection): Promise<bigint> {
    if (this.gen === 0) {
      this.gen = Number((await queryRows<{ g: bigint | null }>(c, 'SELECT coalesce(max(gen), 0) AS g FROM _parquet_pending'))[0]?.g ?? 0);
    }
    return BigInt(++this.gen);
  }

  private async mergeConnection(): Promise<DuckDBConnection> {
    // UTC, as every connection of the instance (duckdb.ts).
    this.mergeConn ??= await this.db.instance.connect();
    return this.mergeConn;
  }
}
