import { Command } from 'commander';
import { parseDuration } from '../../time/windows.js';
import { executeRun } from '../execute-run.js';
import { withMetricsFile } from '../monitoring-options.js';
import { addCommonOptions, configFromFlags, pipelineOptions, runCommandOptions, type CommonFlags } from '../run-options.js';
import { asUsage, UsageError } from '../usage-error.js';
import { addAccountOptions, chosenAccounts, type AccountFlags } from '../account-options.js';
import { instant } from './backfill.js';

interface ExportFlags extends CommonFlags, AccountFlags {
  metricsFile?: string;
  since?: string;
  lookback?: string;
}

export function register(program: Command): void {
  addAccountOptions(addCommonOptions(
    program
      .command('export')
      .description('Incremental export: from checkpoint - lookback to now - settle (the first run needs --since)')
      .option('--since <time>', 'start of the first export when nothing is stored yet (or startDate in the configuration)')
      .option('--lookback <duration>', 're-read this much before the checkpoint (default 24h)')
      .option('--metrics-file <path>', "after the run, write Prometheus metrics to this file (for node_exporter's textfile collector); with --shard, {shard} in the path names each shard's file"),
  )).action(async (flags: ExportFlags) => {
    // A start in the future has nothing to export yet (as backfill refuses a --from in the future).
    const sinceFlag = flags.since !== undefined ? instant(flags.since, '--since') : undefined;
    if (sinceFlag !== undefined && sinceFlag > Date.now() / 1000) {
      throw new UsageError(`--since (${flags.since}) is in the future: there is nothing to export yet`);
    }
    const warnIfSinceUnused = sinceFlag !== undefined;
    const loaded = configFromFlags(flags, { lookback: flags.lookback });
    const accounts = chosenAccounts(loaded, flags);
    if (accounts) {
      const since = sinceFlag;
      const { executeAccountsRun } = await import('../accounts-run.js');
      process.exitCode = await executeAccountsRun('export', loaded, flags, accounts, (a, o) => {
        const c = a.loaded.config;
        const start = since ?? (c.startDate != null ? instant(String(c.startDate), `account ${a.name}: startDate`) : undefined);
        return { account: a.name, kind: 'export', opts: { ...o, lookbackSeconds: parseDuration(c.lookback, 'lookback'), warnIfSinceUnused, ...(start !== undefined ? { since: start } : {}) } };
      });
      return;
    }
    const base = pipelineOptions(loaded, flags);
    const sinceText = flags.since ?? (loaded.config.startDate != null ? String(loaded.config.startDate) : undefined);
    const since = sinceText !== undefined ? instant(sinceText, flags.since ? '--since' : 'startDate') : undefined;
    const lookbackSeconds = asUsage(() => parseDuration(loaded.config.lookback, 'lookback'));
    const { runExport } = await import('../../pipeline/run.js');
    process.exitCode = await executeRun(
      base,
      await withMetricsFile(flags.metricsFile, 'export', (o) => runExport({ ...o, lookbackSeconds, warnIfSinceUnused, ...(since !== undefined ? { since } : {}) })),
      runCommandOptions(loaded, flags, 'export'),
    );
  });
}
