/** Runs tasks one after another, in the order given; a failed task does not stop the next. */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => {});
    return next;
  }

  idle(): Promise<void> {
    return this.tail.then(() => {});
  }
}
