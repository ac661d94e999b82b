/**
 * What the scheduler does after each run, and the dashboard after a burst of heavy requests, so
 * that idle they hold what they held before (issue 39; docs/configuration.md "Idle memory"): what
 * the work allocated and freed otherwise stays in the process.
 *
 * Measured: the answers' bodies stay as ArrayBuffers (15–35 MiB) until V8's next full collection,
 * which an idle process may not make for a while; once collected, their memory and DuckDB's stay
 * in glibc's malloc arenas (freed, not returned) until a malloc_trim: the dashboard stayed ~200 MiB
 * above its size before 60 pages of 1,000 sessions and 8 CSV downloads. Node has no malloc_trim of
 * its own; DuckDB calls it (Allocator::FlushAll, glibc builds) when an instance is closed. So: a
 * full collection, then a small in-memory DuckDB instance opened and closed.
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
