/**
 * What the scheduler does after each run so that between runs it holds what it held idle (issue
 * 39): a run closes its DuckDB files, but what it allocated stays in the process unless handed back.
 *
 * Measured on the scheduler between runs (10 k sessions re-read every run; docs/configuration.md
 * "Idle memory"): the answers' bodies stay as ArrayBuffers (15–35 MiB) until V8's next full
 * collection, which an idle process never makes; once collected, their memory and DuckDB's stay
 * in glibc's malloc arenas (freed, not returned: 30–80 MiB more) until a malloc_trim. Node has no
 * malloc_trim of its own; DuckDB calls it (Allocator::FlushAll, glibc builds) when an instance is
 * closed. So: a full collection, then a small in-memory DuckDB instance opened and closed.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DuckDBInstance } from '@duckdb/node-api';

let collect: (() => void) | null | undefined;

/** V8's full collection (global.gc), made available without a command-line flag; null where it cannot be. */
function fullCollection(): (() => void) | null {
  if (collect !== undefined) return collect;
  const own = (globalThis as { gc?: () => void }).gc;
  if (typeof own === 'function') return (collect = own);
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    collect = typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    collect = null;
  }
  return collect;
}

/**
 * Hands what a finished run allocated back to the system: V8's garbage (the answers' bodies among
 * it), then the allocator's free pages (a DuckDB instance's close trims glibc's arenas). A few ms;
 * never throws (the scheduler goes on either way).
 */
export async function releaseRunMemory(): Promise<void> {
  try {
    fullCollection()?.();
    const instance = await DuckDBInstance.create(':memory:', { threads: '1', autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
    instance.closeSync();
  } catch {
    // nothing to hand back, or no way to: the next run works the same
  }
}
