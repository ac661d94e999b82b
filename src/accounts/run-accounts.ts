/**
 * Runs one job per account, at most `concurrency` at a time. Each account's job is a whole run of
 * its own (its own rate controller, HTTP client, store and lock): one account's 429s, failures or
 * slowness hold only its own slot, and a failing account never stops the others.
 */
export interface AccountResult<T> {
  account: string;
  ok: boolean;
  value?: T;
  error?: unknown;
  durationMs: number;
}

export async function runAccounts<T>(
  accounts: readonly string[],
  concurrency: number,
  job: (account: string) => Promise<T>,
  o: { stopSignal?: AbortSignal; now?: () => number } = {},
): Promise<Array<AccountResult<T>>> {
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`account concurrency must be a positive whole number, got ${concurrency}`);
  const now = o.now ?? Date.now;
  const results: Array<AccountResult<T> | undefined> = new Array(accounts.length);
  let next = 0;
  const worker = async () => {
    while (next < accounts.length) {
      const i = next++;
      const account = accounts[i]!;
      if (o.stopSignal?.aborted) {
        results[i] = { account, ok: false, error: new AccountNotStartedError(account), durationMs: 0 };
        continue;
      }
      const t0 = now();
      try {
        const value = await job(account);
        results[i] = { account, ok: true, value, durationMs: now() - t0 };
      } catch (error) {
        results[i] = { account, ok: false, error, durationMs: now() - t0 };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, accounts.length) }, worker));
  return results as Array<AccountResult<T>>;
}

/** An account not started because the command was stopped (SIGINT/SIGTERM) first. */
export class AccountNotStartedError extends Error {
  override readonly name = 'AccountNotStartedError';
  constructor(readonly account: string) {
    super(`account ${account} not started: the command was stopped first`);
  }
}
