/**
 * The bytes of the answers a run holds (from the request until the window's commit), bounded by the
 * memory budget's share; the accounts of a run share one. While read, an answer counts as twice the
 * largest of the last RECENT (at most the largest body accepted, and that before any has come), then
 * at its size. A request starts when it fits, or when nothing is held (a larger answer goes alone).
 * Without it, answers waiting for slower merges filled 50–60 MiB whatever the budget; counting each
 * request at the largest body instead cut the requests in flight (docs/benchmarks.md "The remaining
 * cause at 320 MiB").
 */
import { woken } from './in-flight.js';

/** How many recent answers the estimate of one in flight looks at. */
const RECENT = 16;

export interface AnswerTicket {
  /** The request was answered with `bytes`: held at that size until release(). */
  answered(bytes: number): void;
  /** The request failed, its answer was dropped, or its window committed: nothing held any more. */
  release(): void;
}

export class AnswerBytes {
  /** Bytes of the answers read and not yet committed. */
  private held = 0;
  /** Requests started and not yet answered. */
  private reading = 0;
  private readonly recent: number[] = [];
  private readonly waiters = new Set<() => void>();
  /** The most `held` reached (debug log, tests). */
  peak = 0;
  /** How many times a request waited for the held bytes to go down. */
  waits = 0;

  constructor(
    readonly limit: number,
    /** The largest body accepted: what a request in flight counts before any answer has come. */
    private readonly firstGuess: number,
    /** Told when a request waits because of the share (once per wait). */
    private readonly onWait?: (fields: { heldBytes: number; readingRequests: number; limitBytes: number }) => void,
  ) {}

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
      while (!this.fits()) await woken(this.waiters, signal);
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
    for (const w of [...this.waiters]) w();
  }
}
