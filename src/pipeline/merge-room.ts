/**
 * Back-pressure from the merges (issue 39): the window loader hands a window to its commit only while
 * the rows committed and not merged yet (the store's MergeBacklog), with those of the windows handed
 * over and not committed yet, stay within BACKLOG_ROW_GROUPS of the table's row groups. Otherwise it
 * waits for a merge: the fetch pauses (its answers wait within their own share, answer-bytes.ts, and
 * no request starts beyond it), nothing is dropped, and the windows go on in the order they came.
 *
 * Why: the merges are slower than the fetch at long text. Without this a 1 M long-text backfill
 * committed its 365 windows in ~15 s and the merges caught up for ~20 s more, at the run's peak
 * (docs/benchmarks.md "320 MiB on a quiet host"). The merges cannot go faster than one row group at a
 * time, so a backlog beyond the next row group buys nothing: two row groups (one merging, one filling)
 * keep them busy. Below one row group the next window always goes (a merge waits for a whole row
 * group, table-sink.ts), so a window larger than a row group never waits on a merge that waits for it.
 * Waiting is a pause only: when background merges stop (a failure, tried again by the run's last
 * flush), nothing is held back.
 */
import type { MergeBacklog } from '../store/session-store.js';
import { memoryTraceOn, traced } from '../util/memory-trace.js';

/** The table's row groups of rows the fetch may run ahead of the merges. */
export const BACKLOG_ROW_GROUPS = 2;

export interface RoomTicket {
  /** The window is committed (its rows are the backlog's now), or its commit failed: no longer counted here. */
  release(): void;
}

export class MergeRoom {
  /** Rows of the windows let through and not committed yet. */
  private handedOver = 0;
  private readonly queue: Array<{ rows: number; go: () => void }> = [];
  private watching = false;
  private openWaiters: Array<() => void> = [];
  /** The most rows held at once, committed or handed over (the run's debug log, tests). */
  peakRows = 0;
  /** How many windows waited for a merge. */
  waits = 0;

  constructor(private readonly backlog: MergeBacklog) {}

  /** The bound, rows: BACKLOG_ROW_GROUPS of the table's row groups (sized from the budget: store/row-groups.ts). */
  get limitRows(): number {
    return BACKLOG_ROW_GROUPS * this.backlog.rowGroupRows;
  }

  /** Rows committed and not merged, and handed over and not committed. */
  get heldRows(): number {
    return this.backlog.rows + this.handedOver;
  }

  /** Waits until a window of `rows` may go to its commit (in the order windows came), then counts it. */
  async enter(rows: number): Promise<RoomTicket> {
    if (this.queue.length || !this.fits(rows)) {
      this.waits++;
      await new Promise<void>((go) => {
        this.queue.push({ rows, go });
        this.pump();
      });
    } else this.admit(rows);
    let counted = true;
    return {
      release: () => {
        if (!counted) return;
        counted = false;
        this.handedOver -= rows;
        this.pump();
      },
    };
  }

  /**
   * Waits while windows wait here or the bound is reached (or `signal` aborts: throws its reason):
   * a request that starts then would only hold its answer in memory until a merge ends.
   */
  async open(signal?: AbortSignal): Promise<void> {
    while (!this.backlog.stalled && (this.queue.length > 0 || this.heldRows >= this.limitRows)) {
      if (signal?.aborted) throw signal.reason;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal?.removeEventListener('abort', done);
          resolve();
        };
        this.openWaiters.push(done);
        signal?.addEventListener('abort', done, { once: true });
        this.watch();
      });
    }
  }

  private fits(rows: number): boolean {
    const held = this.heldRows;
    return this.backlog.stalled || held < this.backlog.rowGroupRows || held + rows <= this.limitRows;
  }

  private admit(rows: number): void {
    this.handedOver += rows;
    this.peakRows = Math.max(this.peakRows, this.heldRows);
  }

  /** Lets the waiting windows go, first come first, while they fit; otherwise waits for the next merge. */
  private pump(): void {
    while (this.queue.length && this.fits(this.queue[0]!.rows)) {
      const w = this.queue.shift()!;
      this.admit(w.rows);
      w.go();
    }
    if (memoryTraceOn) traced.loaderWaiting = this.queue.length;
    const w = this.openWaiters;
    this.openWaiters = [];
    for (const f of w) f();
    if (this.queue.length) this.watch();
  }

  private watch(): void {
    if (this.watching) return;
    this.watching = true;
    void this.backlog.merged().then(() => {
      this.watching = false;
      this.pump();
    });
  }
}
