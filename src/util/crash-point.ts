/**
 * Named crash points for the reliability suite: with SESSION_ETL_CRASH_AT=<point>[:<n>] the process
 * kills itself with SIGKILL the n-th time (default 1st) it reaches <point>, exactly as `kill -9`
 * would. Unset (always, outside the suite), a crash point costs one property read.
 *
 * Points: fetch (a request sent, its answer not read), mid-transaction (rows written inside an
 * open transaction, not committed), after-commit (committed, Parquet not rewritten yet), mid-merge
 * (committed rows being merged into the sessions table, not committed), after-merge (merged, the
 * merged pending files not removed yet), mid-parquet-rewrite (the new file written to .tmp, not
 * renamed into place), after-parquet-rename (the new file in place, its partition still marked pending).
 *
 * Test only, too: SESSION_ETL_FAULT=enospc:<point>[:<n>] makes the n-th passage through
 * mid-transaction or mid-parquet-rewrite throw ENOSPC, as a full disk would there (the suite's
 * fallback where it cannot mount a small file system).
 */
export type CrashPointName =
  | 'fetch'
  | 'mid-transaction'
  | 'after-commit'
  | 'mid-merge'
  | 'after-merge'
  | 'mid-parquet-rewrite'
  | 'after-parquet-rename';

const spec = process.env.SESSION_ETL_CRASH_AT;
const [target, nth] = spec ? [spec.split(':')[0], Number(spec.split(':')[1] ?? 1)] : [undefined, 0];
let seen = 0;

const faultSpec = /^enospc:([a-z-]+)(?::(\d+))?$/.exec(process.env.SESSION_ETL_FAULT ?? '');
const faultTarget = faultSpec?.[1];
const faultNth = Number(faultSpec?.[2] ?? 1);
let faultSeen = 0;

export function crashPoint(name: CrashPointName): void {
  if (faultTarget === name && ++faultSeen >= faultNth) {
    throw Object.assign(new Error(`ENOSPC: no space left on device (injected by SESSION_ETL_FAULT at ${name})`), { code: 'ENOSPC' });
  }
  if (target !== name) return;
  seen++;
  if (seen >= nth) process.kill(process.pid, 'SIGKILL');
}
