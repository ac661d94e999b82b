/**
 * An attempt's hold on a place in flight (beforeAttempt). Release it however the attempt ended (a
 * finally block): twice is harmless, never would hold a worker back forever.
 */
export interface AttemptSlot {
  release(): void;
}

/** The requests a run has in flight, against the number allowed (which changes while attempts wait). */
export class InFlight {
  /** Attempts let go whose slot is not released yet. */
  count = 0;
  private readonly waiters = new Set<() => void>();

  /** Takes a place: its slot gives it back (once) and lets the waiters look again. */
  take(): AttemptSlot {
    this.count++;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.count--;
        this.wake();
      },
    };
  }

  /** Resolves when a place is given back or `wake` is called (the number allowed grew); rejects when `signal` aborts. */
  freed(signal?: AbortSignal): Promise<void> {
    return woken(this.waiters, signal);
  }

  /** Every waiter looks again (in the order they came): those that find room go, the others wait on. */
  wake(): void {
    for (const w of [...this.waiters]) w();
  }
}

/** Resolves when one of `waiters` is called (it removes itself); rejects with the reason when `signal` aborts first. */
export function woken(waiters: Set<() => void>, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      waiters.delete(wake);
      reject(signal?.reason);
    };
    const wake = () => {
      waiters.delete(wake);
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    waiters.add(wake);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
