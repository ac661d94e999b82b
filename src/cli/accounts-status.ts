/** `status` over many accounts: one block (or JSON entry) per account and a total; `--check` is healthy only when every account is. */
import { allStores } from '../accounts/stores.js';
import type { DatasetLocation } from '../store/dataset/location.js';
import { checkHealth } from '../monitoring/health.js';
import { readAccountsMonitoredStates } from '../monitoring/read-state.js';
import { accountStatus, readStatus, readStoreReading, type StoreStatus } from '../store/status.js';
import { legacyAccountDir, legacyAccountParquetDir } from '../accounts/layout.js';
import { legacyAccounts } from '../accounts/legacy.js';
import type { VolumeRule } from '../store/volume-anomalies.js';
import { ExitCode } from './exit-codes.js';
import { parseMaxLag, warnIfMaxLagBelowSettle } from './monitoring-options.js';
import { partialDays } from '../time/partial-days.js';

/** What `status` says of an account still in the layout before schema 3. */
export const LEGACY_NOTE = 'in the layout before schema 3 (its own store under accounts/): read as it is; the next export or `session-etl accounts migrate` moves it into the shared store';

export async function accountsStatus(
  root: string,
  accounts: string[],
  flags: { runs: number; json?: boolean; check?: boolean; maxLag?: string; settle: string },
  format: (s: StoreStatus) => string,
  dataset?: DatasetLocation,
  volume?: VolumeRule,
): Promise<number> {
  const nowMs = Date.now();
  if (flags.check) {
    const maxLagSeconds = parseMaxLag(flags.maxLag);
    warnIfMaxLagBelowSettle(maxLagSeconds, flags.settle);
    const states = await readAccountsMonitoredStates(root, accounts, nowMs, dataset, volume);
    const results = accounts.map((a) => ({ account: a, ...checkHealth(states.get(a)!, { nowMs, maxLagSeconds, target: { dataDir: root, account: a } }) }));
    const unhealthy = results.filter((r) => !r.healthy);
    if (flags.json) process.stdout.write(JSON.stringify({ dataDir: root, healthy: unhealthy.length === 0, accounts: results }) + '\n');
    else if (!unhealthy.length) process.stdout.write(`OK: ${accounts.length} accounts healthy\n`);
    else for (const r of unhealthy) for (const reason of r.reasons) process.stdout.write(`UNHEALTHY: account ${r.account}: ${reason}\n`);
    return unhealthy.length ? ExitCode.runFailed : ExitCode.ok;
  }
  // Each store read once; an account's status comes from the store that holds it.
  const found = new Map<string, StoreStatus>();
  let bytes = 0;
  let parquetBytes = 0;
  for (const store of await allStores(root, dataset)) {
    const reading = await readStoreReading(root, flags.runs, store, dataset, volume);
    bytes += reading.bytes.duckdb;
    parquetBytes = reading.bytes.parquet;
    for (const a of reading.state.accounts ?? []) {
      if (accounts.includes(a.account)) found.set(a.account, accountStatus(reading, a.account, nowMs, flags.runs));
    }
  }
  // Accounts still in the layout before schema 3 (accounts/NAME/): their own store, read as it is.
  const legacy = new Set(legacyAccounts(root, accounts.filter((a) => !found.has(a))));
  for (const a of legacy) found.set(a, await readStatus(legacyAccountDir(root, a), nowMs, flags.runs, undefined, { kind: 'local', root: legacyAccountParquetDir(root, a) }, volume));
  const entries = accounts.map((a) => {
    const s = found.get(a);
    const note = legacy.has(a) ? LEGACY_NOTE : null;
    return s
      ? { account: a, status: { ...s, partialDays: partialDays(s.coverage) }, note }
      : { account: a, status: null, note: 'no data yet (the next export backfills it from its startDate)' };
  });
  const withData = entries.flatMap((e) => (e.status ? [e.status] : []));
  const total = {
    accounts: entries.length,
    withData: withData.length,
    rows: withData.reduce((n, s) => n + (s.rows ?? 0), 0),
    // The accounts share the stores and the dataset: each counted once.
    bytes: bytes + parquetBytes,
    oldestCheckpoint: withData.map((s) => s.checkpoint).filter((c): c is string => c !== null).sort()[0] ?? null,
    runningNow: withData.filter((s) => s.runningNow).length,
  };
  if (flags.json) {
    process.stdout.write(JSON.stringify({ dataDir: root, accounts: entries, total }) + '\n');
  } else {
    for (const e of entries) {
      process.stdout.write(`account ${e.account}\n`);
      if (e.status && e.note) process.stdout.write(`  ${e.note}\n`);
      process.stdout.write(e.status ? format(e.status).replace(/^(?=.)/gm, '  ') : `  ${e.note}\n`);
    }
    process.stdout.write(
      `total: ${total.accounts} accounts (${total.withData} with data), ${total.rows} rows, oldest checkpoint ${total.oldestCheckpoint ?? '(none)'}, ${total.runningNow} running now\n`,
    );
  }
  return ExitCode.ok;
}
