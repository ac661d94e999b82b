/**
 * Every statement on a writer's connections against the one moment nothing may use them: attaching
 * the file again (duckdb.ts resizeRowGroups). A DETACH while another connection ran a statement or
 * held a transaction left the old attachment alive: the ATTACH failed ("Unique file handle
 * conflict"), every later statement too, and the process crashed (SIGSEGV). The Db passes every
 * statement through it (duckdb.ts gatedConnection).
 *
 * A reader is one statement, or a transaction from BEGIN to its end. The exclusive moment waits for
 * readers inside; readers that come meanwhile wait for it. So a connection inside a transaction must
 * not wait for a statement of another connection of the Db (none does).
 */
export class ReadGate {
  private active = 0;
  private closed: Promise<void> | undefined;
  private drained: (() => void) | undefined;

  /** Whether an exclusive moment is waiting or running (tests watch it). */
  get exclusivePending(): boolean {
    return this.closed !== undefined;
  }

  /** Enters as a reader, after any exclusive moment; the function returned leaves (once). */
  async enter(): Promise<() => void> {
    while (this.closed) await this.closed;
    this.active++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.active--;
      if (this.active === 0) this.drained?.();
    };
  }

  /** Runs a reader (see enter). */
  async read<T>(fn: () => Promise<T>): Promise<T> {
    const leave = await this.enter();
    try {
      return await fn();
    } finally {
      leave();
    }
  }

  /** Runs `fn` with no reader inside: new readers wait, those inside are waited for. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.closed) await this.closed;
    let open!: () => void;
    this.closed = new Promise<void>((r) => (open = r));
    try {
      while (this.active > 0) await new Promise<void>((r) => (this.drained = r));
      return await fn();
    } finally {
      this.drained = undefined;
      this.closed = undefined;
      open();
    }
  }
}
