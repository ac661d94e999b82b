/** `status` over many accounts: one block (or JSON entry) per account and a total; `--check` is healthy only when every account is. */
import { accountDataDir, accountParquetDir } from '../accounts/layout.js';
import { checkHealth } from '../monitoring/health.js';
import { readMonitoredState } from '../monitoring/read-state.js';
import { DataDirError } from '../store/errors.js';
import { readStatus, type StoreStatus } from '../store/status.js';
import { ExitCode } from './exit-codes.js';
import { parseMaxLag, warnIfMaxLagBelowSettle } from './monitoring-options.js';
import { partialDays } from './partial-days.js';

export async function accountsStatus(
  root: string,
  accounts: string[],
  flags: { runs: number; json?: boolean; check?: boolean; maxLag?: string; settle: string },
  format: (s: StoreStatus) => string,
): Promise<number> {
  const nowMs = Date.now();
  if (flags.check) {
    const maxLagSeconds = parseMaxLag(flags.maxLag);
    warnIfMaxLagBelowSettle(maxLagSeconds, flags.settle);
    const results = [];
    for (const a of accounts) {
      const health = checkHealth(await readMonitoredState(accountDataDir(root, a), nowMs), { nowMs, maxLagSeconds });
      results.push({ account: a, ...health });
    }
    const unhealthy = results.filter((r) => !r.healthy);
    if (flags.json) process.stdout.write(JSON.stringify({ dataDir: root, healthy: unhealthy.length === 0, accounts: results }) + '\n');
    else if (!unhealthy.length) process.stdout.write(`OK: ${accounts.length} accounts healthy\n`);
    else for (const r of unhealthy) for (const reason of r.reasons) process.stdout.write(`UNHEALTHY: account ${r.account}: ${reason}\n`);
    return unhealthy.length ? ExitCode.runFailed : ExitCode.ok;
  }
  const entries: Array<{ account: string; status: (StoreStatus & { partialDays: unknown }) | null; note: string | null }> = [];
  for (const a of accounts) {
    try {
      const s = await readStatus(accountDataDir(root, a), nowMs, flags.runs, accountParquetDir(root, a));
      entries.push({ account: a, status: { ...s, partialDays: partialDays(s.coverage) }, note: null });
    } catch (err) {
      if (!(err instanceof DataDirError && /no session-etl data/.test(err.message))) throw err;
      entries.push({ account: a, status: null, note: 'no data yet (the next export backfills it from its startDate)' });
    }
  }
  const withData = entries.flatMap((e) => (e.status ? [e.status] : []));
  const total = {
    accounts: entries.length,
    withData: withData.length,
    rows: withData.reduce((n, s) => n + (s.rows ?? 0), 0),
    bytes: withData.reduce((n, s) => n + s.bytes.total, 0),
    oldestCheckpoint: withData.map((s) => s.checkpoint).filter((c): c is string => c !== null).sort()[0] ?? null,
    runningNow: withData.filter((s) => s.runningNow).length,
  };
  if (flags.json) {
    process.stdout.write(JSON.stringify({ dataDir: root, accounts: entries, total }) + '\n');
  } else {
    for (const e of entries) {
      process.stdout.write(`account ${e.account}\n`);
      process.stdout.write(e.status ? format(e.status).replace(/^(?=.)/gm, '  ') : `  ${e.note}\n`);
    }
    process.stdout.write(
      `total: ${total.accounts} accounts (${total.withData} with data), ${total.rows} rows, oldest checkpoint ${total.oldestCheckpoint ?? '(none)'}, ${total.runningNow} running now\n`,
    );
  }
  return ExitCode.ok;
}
