/**
 * Work that overlaps the fetching (formats duckdb and both): after each commit, merge what is
 * committed, slice by slice; after each merge, rewrite (on other connections, while the next merge
 * runs) the Parquet partitions of days the coverage map holds whole. Two serial queues: merges, and
 * rewrites. A failure stops background work until the next flush, which tries again and reports;
 * the failure is also reported when it happens (onError).
 */
import { SerialQueue } from './serial-queue.js';
import type { FlushResult, MergeResult } from './sink.js';

export interface BackgroundSteps {
  /** One bounded merge; `more` when pending rows are left. */
  mergeSlice(): Promise<MergeResult & { more: boolean }>;
  /** Rewrites the partitions that are ready; returns them. Absent: no Parquet (format duckdb). */
  rewriteReady?: () => Promise<string[]>;
}

export class BackgroundWork {
  private readonly merges = new SerialQueue();
  private readonly rewrites = new SerialQueue();
  private mergeLoop = false;
  private mergeAgain = false;
  private rewriteLoop = false;
  private rewriteAgain = false;
  private result: FlushResult = { partitions: [], inserted: 0, updated: 0, unchanged: 0 };
  private stopped = false;
  /** The first error of a background merge or rewrite (the final flush tries again and reports). */
  error: unknown;

  constructor(
    private readonly steps: BackgroundSteps,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Serialises merges (on their own connection: commits go on meanwhile). */
  merging<T>(fn: () => Promise<T>): Promise<T> {
    return this.merges.run(fn);
  }

  /** Serialises Parquet rewrites (on their own connections: merges and commits go on meanwhile). */
  rewriting<T>(fn: () => Promise<T>): Promise<T> {
    return this.rewrites.run(fn);
  }

  /** What background work did since the last call. */
  takeResult(): FlushResult {
    const r = this.result;
    this.result = { partitions: [], inserted: 0, updated: 0, unchanged: 0 };
    return r;
  }

  /** After a commit: merge what is committed (and rewrite what that makes ready), unless running already. */
  kick(): void {
    if (this.stopped || this.error !== undefined) return;
    this.mergeAgain = true;
    if (this.mergeLoop) return;
    this.mergeLoop = true;
    void this.merging(async () => {
      try {
        while (this.mergeAgain && !this.stopped && this.error === undefined) {
          this.mergeAgain = false;
          const m = await this.steps.mergeSlice();
          this.result.inserted += m.inserted;
          this.result.updated += m.updated;
          this.result.unchanged += m.unchanged;
          if (m.more) this.mergeAgain = true;
          if (this.steps.rewriteReady) this.kickRewrites();
        }
      } catch (err) {
        this.fail(err);
      } finally {
        this.mergeLoop = false;
      }
    });
  }

  stop(): void {
    this.stopped = true;
  }

  async idle(): Promise<void> {
    await this.merges.idle();
    await this.rewrites.idle();
  }

  private kickRewrites(): void {
    const rewriteReady = this.steps.rewriteReady;
    if (!rewriteReady || this.stopped || this.error !== undefined) return;
    this.rewriteAgain = true;
    if (this.rewriteLoop) return;
    this.rewriteLoop = true;
    void this.rewriting(async () => {
      try {
        while (this.rewriteAgain && !this.stopped && this.error === undefined) {
          this.rewriteAgain = false;
          this.result.partitions.push(...(await rewriteReady()));
        }
      } catch (err) {
        this.fail(err);
      } finally {
        this.rewriteLoop = false;
      }
    });
  }

  private fail(err: unknown): void {
    if (this.error !== undefined) return;
    this.error = err;
    this.onError(err);
  }
}
