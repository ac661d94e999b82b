/**
 * After each scheduled run and a burst of dashboard requests, so that idle they hold what they held before
 * (docs/configuration.md "Idle memory"): the bodies wait for V8's next full collection, then glibc's arenas keep
 * what was freed until a malloc_trim, which Node lacks and DuckDB calls when an instance is closed.
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

/** A full collection, then a small in-memory DuckDB instance opened and closed. A few ms; never throws. */
export async function releaseRunMemory(): Promise<void> {
  try {
    fullCollection()?.();
    const instance = await DuckDBInstance.create(':memory:', { threads: '1', autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' });
    instance.closeSync();
  } catch {
    // nothing to hand back, or no way to: the next run works the same
  }
}
