/**
 * Every statement on a writer's DuckDB connections against the one moment nothing may use them: a
 * new store attaching its file again with the row groups its first rows fit (duckdb.ts
 * resizeRowGroups, at table-sink.ts beforeCommit). A DETACH while another connection of the instance
 * ran a statement, or held a transaction open, left the old attachment alive: the ATTACH after it
 * failed ("Unique file handle conflict"), every later statement with it ("Catalog "store" does not
 * exist"), and the process then crashed (SIGSEGV, in the memory bench and in a CLI test). The Db
 * owns the gate and passes every statement of every connection it hands out through it
 * (duckdb.ts gatedConnection): no caller has to remember it.
 *
 * A reader is one statement, or a transaction from its BEGIN to its COMMIT or ROLLBACK. The
 * exclusive moment waits for the readers inside; readers that come meanwhile wait for it (so it is
 * not starved). Hence the one rule: a connection inside a transaction must not wait for a statement
 * of another connection of the same Db (that statement would wait for the exclusive moment, which
 * waits for the transaction). None does: each transaction runs on its own connection alone.
 */
export class ReadGate {
  private active = 0;
  private closed: Promise<void> | undefined;
  private drained: (() => void) | undefined;

  /** Whether an exclusive moment is waiting for the readers inside, or running (tests watch it). */
  get exclusivePending(): boolean {
    return this.closed !== undefined;
  }

  /**
   * Enters as a reader, after the exclusive moment if one is waiting or running; the function
   * returned leaves (once, however often it is called).
   */
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
