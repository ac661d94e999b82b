/**
 * `session-etl verify --from D1 --to D2`: fetches the range again exactly as a backfill would and
 * compares it with the store, day by day (docs/data-quality.md "Verifying against the source"). Exit 0 when the
 * store holds the source's sessions of every day compared (or --repair made it so), 1 when it does not.
 */
import { Command } from 'commander';
import { executeRun } from '../execute-run.js';
import { addCommonOptions, configFromFlags, pipelineOptions, runCommandOptions, type CommonFlags } from '../run-options.js';
import { UsageError } from '../usage-error.js';
import { addAccountOptions, chosenAccounts, type AccountFlags } from '../account-options.js';
import { instant } from './backfill.js';

interface VerifyFlags extends CommonFlags, AccountFlags {
  from: string;
  to: string;
  sample?: string;
  repair?: boolean;
  deleteMissing?: boolean;
  maxDelete?: string;
}

export function register(program: Command): void {
  addAccountOptions(
    addCommonOptions(
      program
        .command('verify')
        .description('Fetch [--from, --to) again as a backfill would and compare it with the store: sessions missing, gone from the source, changed (exit 1 when the store differs)')
        .requiredOption('--from <time>', 'range start: 2026-01-01 (UTC), 2026-01-01T08:00:00+02:00, or epoch seconds')
        .requiredOption('--to <time>', 'range end (exclusive), same forms; clamped to now - settle')
        .option('--sample <n>', 'verify only N random days of the range')
        .option('--repair', 'make the store equal the source: commit what is missing or changed, as a backfill would')
        .option('--delete-missing', 'with --repair: also remove the sessions the source no longer returns (refused on a day the source answered nothing for, on answers that look capped, or beyond 5 % of a day: exit 5)')
        .option('--max-delete <n>', 'with --delete-missing: remove up to N sessions in all whatever those checks say (more than N: none)'),
    ),
  ).action(async (flags: VerifyFlags) => {
    const from = instant(flags.from, '--from');
    const to = instant(flags.to, '--to');
    if (from >= to) throw new UsageError(`--from (${flags.from}) must be before --to (${flags.to})`);
    if (from > Date.now() / 1000) throw new UsageError(`--from (${flags.from}) is in the future: there is nothing to verify yet`);
    let sample: number | undefined;
    if (flags.sample !== undefined) {
      if (!/^\d+$/.test(flags.sample.trim()) || Number(flags.sample) < 1) throw new UsageError(`--sample must be a positive whole number of days, got ${JSON.stringify(flags.sample)}`);
      sample = Number(flags.sample);
    }
    if (flags.deleteMissing && !flags.repair) {
      throw new UsageError('--delete-missing goes with --repair: sessions the source no longer returns are removed only while repairing, and only when asked');
    }
    let maxDelete: number | undefined;
    if (flags.maxDelete !== undefined) {
      if (!/^\d+$/.test(flags.maxDelete.trim())) throw new UsageError(`--max-delete must be a whole number of sessions (0 or more), got ${JSON.stringify(flags.maxDelete)}`);
      if (!flags.deleteMissing) throw new UsageError('--max-delete goes with --repair --delete-missing: it allows that many removals of sessions the source no longer returns');
      maxDelete = Number(flags.maxDelete);
    }
    const own = {
      from,
      to,
      ...(sample !== undefined ? { sample } : {}),
      ...(flags.repair ? { repair: true } : {}),
      ...(flags.deleteMissing ? { deleteMissing: true } : {}),
      ...(maxDelete !== undefined ? { maxDelete } : {}),
    };
    const loaded = configFromFlags(flags);
    const accounts = chosenAccounts(loaded, flags);
    if (accounts) {
      const { executeAccountsRun } = await import('../accounts-run.js');
      process.exitCode = await executeAccountsRun('verify', loaded, flags, accounts, (a, o) => ({ account: a.name, kind: 'verify', opts: { ...o, ...own } }));
      return;
    }
    const base = pipelineOptions(loaded, flags);
    const { runVerify } = await import('../../pipeline/run.js');
    process.exitCode = await executeRun(base, (o) => runVerify({ ...o, ...own }), runCommandOptions(loaded, flags, 'verify'));
  });
}
