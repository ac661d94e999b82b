/**
 * The bytes of the answers a run holds, bounded by the memory budget's share (MemorySplit.answerBytes).
 *
 * An answer is held from the moment its request starts until its window is committed: while it is
 * read it counts as twice the largest of the last RECENT answers (at most the largest body
 * accepted, and that before any answer has come), then at its own size until the commit resolves. A request starts only when what
 * is held, with it, stays within the share, or when nothing at all is held: a single answer larger
 * than the share still proceeds, one at a time. The merges are slower than the fetch at long text,
 * so without this the answers waiting for their commit filled 50–60 MiB whatever the budget
 * (docs/benchmarks.md "The remaining cause at 320 MiB"). The accounts of a run share one.
 *
 * So the held bytes stay within the share unless an answer is more than twice the largest recent
 * one (its size is known only once it is read: a day after quiet ones); then by that excess at most,
 * each body staying below the largest accepted. Counting a request at the largest body accepted
 * instead would bound it always, but cut the requests in flight whenever anything waits, small
 * answers too.
 */

/** How many recent answers the estimate of one in flight looks at. */
const RECENT = 16;

export interface AnswerTicket {
  /** The request was answered with `bytes`: held at that size until release(). */
  answered(bytes: number): void;
  /** The request failed, or its answer is dropped (the window is split), or its window is committed: nothing held any more. */
  release(): void;
}

export class AnswerBytes {
  /** Bytes of the answers read and not yet committed. */
  private held = 0;
  /** Requests started and not yet answered. */
  private reading = 0;
  private readonly recent: number[] = [];
  private waiters: Array<() => void> = [];
  /** The most `held` reached (debug log, tests). */
  peak = 0;
  /** How many times a request waited for the held bytes to go down. */
  waits = 0;

  constructor(
    /** The share, bytes. */
    readonly limit: number,
    /** The largest body accepted: what a request in flight counts before any answer has come. */
    private readonly firstGuess: number,
    /** Told when a request waits because of the share (once per wait). */
    private readonly onWait?: (fields: { heldBytes: number; readingRequests: number; limitBytes: number }) => void,
  ) {}

  /** What one request in flight is counted as. */
  private estimate(): number {
    return this.recent.length ? Math.min(this.firstGuess, 2 * Math.max(...this.recent)) : this.firstGuess;
  }

  private fits(): boolean {
    if (this.held === 0 && this.reading === 0) return true;
    return this.held + (this.reading + 1) * this.estimate() <= this.limit;
  }

  /** Waits until one more request fits (or `signal` aborts: throws its reason), then counts it as reading. */
  async begin(signal?: AbortSignal): Promise<AnswerTicket> {
    if (!this.fits()) {
      this.waits++;
      this.onWait?.({ heldBytes: this.held, readingRequests: this.reading, limitBytes: this.limit });
      while (!this.fits()) {
        if (signal?.aborted) throw signal.reason;
        await new Promise<void>((resolve) => {
          const done = () => {
            signal?.removeEventListener('abort', done);
            resolve();
          };
          this.waiters.push(done);
          signal?.addEventListener('abort', done, { once: true });
        });
      }
    }
    if (signal?.aborted) throw signal.reason;
    this.reading++;
    let state: 'reading' | 'held' | 'done' = 'reading';
    let size = 0;
    return {
      answered: (bytes) => {
        if (state !== 'reading') return;
        state = 'held';
        size = bytes;
        this.reading--;
        this.held += bytes;
        this.peak = Math.max(this.peak, this.held);
        this.recent.push(bytes);
        if (this.recent.length > RECENT) this.recent.shift();
        this.wake();
      },
      release: () => {
        if (state === 'done') return;
        if (state === 'reading') this.reading--;
        else this.held -= size;
        state = 'done';
        this.wake();
      },
    };
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}
