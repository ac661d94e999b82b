/**
 * Work that overlaps the fetching (formats duckdb and both): after each commit, merge what is
 * committed, slice by slice; after each merge, rewrite (while the next merge runs) the Parquet days
 * the coverage holds whole. A failure is reported (onError) and stops background work until the
 * next flush, which tries again.
 */
import { SerialQueue } from './serial-queue.js';
import { addCounts, type FlushResult, type MergeResult } from './sink.js';

export interface BackgroundSteps {
  /** One bounded merge; `more` when pending rows are left. */
  mergeSlice(): Promise<MergeResult & { more: boolean }>;
  /** Rewrites the partitions that are ready; returns them. Absent: no Parquet (format duckdb). */
  rewriteReady?: () => Promise<string[]>;
}

export class BackgroundWork {
  private readonly merges = new SerialQueue();
  private readonly rewrites = new SerialQueue();
  private readonly mergeLoop = { running: false, again: false };
  private readonly rewriteLoop = { running: false, again: false };
  private result: FlushResult = { partitions: [], counts: new Map() };
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
    this.result = { partitions: [], counts: new Map() };
    return r;
  }

  /** After a commit: merge what is committed (and rewrite what that makes ready), unless running already. */
  kick(): void {
    this.loop(this.mergeLoop, this.merges, async () => {
      const m = await this.steps.mergeSlice();
      addCounts(this.result.counts, m.counts);
      if (m.more) this.mergeLoop.again = true;
      if (this.steps.rewriteReady) this.kickRewrites();
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
    if (!rewriteReady) return;
    this.loop(this.rewriteLoop, this.rewrites, async () => {
      this.result.partitions.push(...(await rewriteReady()));
    });
  }

  /** Runs `step` on `queue` until nothing asks again (`again`), unless the loop runs already. */
  private loop(l: { running: boolean; again: boolean }, queue: SerialQueue, step: () => Promise<void>): void {
    if (this.stopped || this.error !== undefined) return;
    l.again = true;
    if (l.running) return;
    l.running = true;
    void queue.run(async () => {
      try {
        while (l.again && !this.stopped && this.error === undefined) {
          l.again = false;
          await step();
        }
      } catch (err) {
        this.fail(err);
      } finally {
        l.running = false;
      }
    });
  }

  private fail(err: unknown): void {
    if (this.error !== undefined) return;
    this.error = err;
    this.onError(err);
  }
}
