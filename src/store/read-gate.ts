/**
 * Readers that use a store's DuckDB connections outside its write queue (the state snapshot, a
 * coverage read) against the one moment nothing may use them: a new store attaching its file again
 * with the row groups its first rows fit (table-sink.ts beforeCommit; duckdb.ts resizeRowGroups).
 * A DETACH while another connection ran a statement failed it ("Catalog "store" does not exist") and
 * then crashed the process (SIGSEGV, measured in the memory bench), so readers wait for it and it
 * waits for the readers.
 */
export class ReadGate {
  private active = 0;
  private closed: Promise<void> | undefined;
  private drained: (() => void) | undefined;

  /** Runs a reader, after the exclusive moment if one is under way. Not nested inside another read. */
  async read<T>(fn: () => Promise<T>): Promise<T> {
    while (this.closed) await this.closed;
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      if (this.active === 0) this.drained?.();
    }
  }

  /** Runs `fn` with no reader running: new readers wait, running ones are waited for. */
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
