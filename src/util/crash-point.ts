/** Crash points for the reliability suite (docs/reliability.md "Test-only hooks"); unset, one property read each. */
type CrashPointName =
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
