/**
 * Named crash points for the reliability suite: with SESSION_ETL_CRASH_AT=<point>[:<n>] the process
 * kills itself with SIGKILL the n-th time (default 1st) it reaches <point>, exactly as `kill -9`
 * would. Unset (always, outside the suite), a crash point costs one property read.
 *
 * Points: fetch (a request sent, its answer not read), mid-transaction (rows written inside an
 * open transaction, not committed), after-commit (committed, Parquet not rewritten yet),
 * mid-parquet-rewrite (the new file written to .tmp, not renamed into place).
 */
export type CrashPointName = 'fetch' | 'mid-transaction' | 'after-commit' | 'mid-parquet-rewrite';

const spec = process.env.SESSION_ETL_CRASH_AT;
const [target, nth] = spec ? [spec.split(':')[0], Number(spec.split(':')[1] ?? 1)] : [undefined, 0];
let seen = 0;

export function crashPoint(name: CrashPointName): void {
  if (target !== name) return;
  seen++;
  if (seen >= nth) process.kill(process.pid, 'SIGKILL');
}
