import { Command } from 'commander';
import { parseInstant } from '../../time/windows.js';
import { executeRun } from '../execute-run.js';
import { withMetricsFile } from '../monitoring-options.js';
import { addCommonOptions, configFromFlags, pipelineOptions, runCommandOptions, type CommonFlags } from '../run-options.js';
import { asUsage, UsageError } from '../usage-error.js';
import { addAccountOptions, chosenAccounts, type AccountFlags } from '../account-options.js';

interface BackfillFlags extends CommonFlags, AccountFlags {
  metricsFile?: string;
  from: string;
  to: string;
  newestFirst?: boolean;
}

export function register(program: Command): void {
  addAccountOptions(addCommonOptions(
    program
      .command('backfill')
      .description('Load the sessions of [--from, --to) (re-running an interrupted backfill of the same range resumes it)')
      .requiredOption('--from <time>', 'range start: 2026-01-01 (UTC), 2026-01-01T08:00:00+02:00, or epoch seconds')
      .requiredOption('--to <time>', 'range end (exclusive), same forms; clamped to now - settle')
      .option('--newest-first', 'fetch the most recent windows first')
      .option('--metrics-file <path>', "after the run, write Prometheus metrics to this file (for node_exporter's textfile collector); with --shard, {shard} in the path names each shard's file"),
  )).action(async (flags: BackfillFlags) => {
    const from = instant(flags.from, '--from');
    const to = instant(flags.to, '--to');
    if (from >= to) throw new UsageError(`--from (${flags.from}) must be before --to (${flags.to})`);
    if (from > Date.now() / 1000) {
      throw new UsageError(`--from (${flags.from}) is in the future: the whole range is, and there is nothing to fetch yet`);
    }
    const loaded = configFromFlags(flags);
    const accounts = chosenAccounts(loaded, flags);
    if (accounts) {
      const { executeAccountsRun } = await import('../accounts-run.js');
      process.exitCode = await executeAccountsRun('backfill', loaded, flags, accounts, (a, o) => ({
        account: a.name,
        kind: 'backfill',
        opts: { ...o, from, to, ...(flags.newestFirst ? { newestFirst: true } : {}) },
      }));
      return;
    }
    const base = pipelineOptions(loaded, flags);
    const { runBackfill } = await import('../../pipeline/run.js');
    process.exitCode = await executeRun(
      base,
      await withMetricsFile(flags.metricsFile, 'backfill', (o) => runBackfill({ ...o, from, to, ...(flags.newestFirst ? { newestFirst: true } : {}) })),
      runCommandOptions(loaded, flags, 'backfill'),
    );
  });
}

export function instant(text: string, flag: string): number {
  return asUsage(() => parseInstant(text, flag));
}
