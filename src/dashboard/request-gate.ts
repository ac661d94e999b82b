/**
 * Bounds the heavy requests running at once, so that however many arrive memory and DuckDB's
 * threads stay shared with the page's own requests: at most `running`; up to `waiting` more wait,
 * each at most `waitMs`; the others are turned away (the server answers 503 with Retry-After).
 */
export class RequestGate {
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(
    readonly running: number,
    readonly waiting: number,
    readonly waitMs: number,
  ) {}

  get idle(): boolean {
    return this.active === 0 && this.queue.length === 0;
  }

  /** A place (the function returned gives it back), or null. */
  async enter(): Promise<(() => void) | null> {
    if (this.active < this.running) {
      this.active++;
      return this.releaser();
    }
    if (this.queue.length >= this.waiting) return null;
    return new Promise((resolve) => {
      const grant = () => {
        clearTimeout(timer);
        this.active++;
        resolve(this.releaser());
      };
      const timer = setTimeout(() => {
        this.queue.splice(this.queue.indexOf(grant), 1);
        resolve(null);
      }, this.waitMs);
      this.queue.push(grant);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      this.queue.shift()?.();
    };
  }
}
