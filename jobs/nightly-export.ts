/**
 * The nightly incremental export: at the configured cron expression (default 02:00) in the
 * configured time zone (default UTC), export from checkpoint - lookback to now - settle.
 */
import type { JobContext, JobDefinition } from '../src/scheduler/job.js';
import { runExport, type ExportOptions } from '../src/pipeline/run.js';

const exportOptions = (ctx: JobContext): ExportOptions => ({
  ...ctx.pipeline,
  lookbackSeconds: ctx.lookbackSeconds,
  ...(ctx.since !== undefined ? { since: ctx.since } : {}),
});

const job: JobDefinition = {
  name: 'nightly-export',
  description: 'incremental export of new and changed sessions',
  schedule: ({ cron, timezone }) => ({ cron, timezone }),
  needsStartDate: true,
  run: (ctx) => runExport(exportOptions(ctx)),
  // With many accounts: each account's export, run side by side with the others on their store.
  accountJob: (ctx) => ({ kind: 'export', opts: exportOptions(ctx) }),
};

export default job;
