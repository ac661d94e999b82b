import { describe, expect, it } from 'vitest';
import * as lib from '../src/index.js';

describe('errors a library user can meet', () => {
  it('are exported from the package entry, each with the exit code the README documents', () => {
    const cases: Array<[unknown, number]> = [
      [new lib.ConfigError('bad value'), 2],
      [new lib.StoreSettingError('SESSION_ETL_X is not a number'), 2],
      [new lib.DataDirError('not writable'), 2],
      [new lib.StoreWriteError('disk full'), 1],
      [new lib.StoreBusyError('held by a BI tool'), 3],
      [new lib.FirstRunNeedsSinceError('give --since'), 2],
      [new lib.RunFailedError('failed', 'run-1'), 1],
      [new lib.SignInRequiredError('not-signed-in'), 4],
      [new lib.LockHeldError('/data/.lock', undefined), 3],
      [new Error('anything else'), 1],
    ];
    for (const [err, code] of cases) expect(lib.exitCodeOf(err), String(err)).toBe(code);
    // A bad instant is a RangeError, which the CLI reports as a usage error (exit 2).
    expect(new lib.InstantParseError('--from', 'yesterday', 'is not a date')).toBeInstanceOf(RangeError);
    expect(lib.ExitCode).toMatchObject({ ok: 0, runFailed: 1, usage: 2, locked: 3, signInRequired: 4, sigint: 130, sigterm: 143 });
  });
});
