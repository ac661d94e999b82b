/**
 * The nightly incremental export: at the configured cron expression (default 02:00) in the
 * configured time zone (default UTC), export from checkpoint - lookback to now - settle.
 */
import type { JobDefinition } from '../src/scheduler/job.js';
import { runExport } from '../src/pipeline/run.js';

const job: JobDefinition = {
  name: 'nightly-export',
  description: 'incremental export of new and changed sessions',
  schedule: ({ cron, timezone }) => ({ cron, timezone }),
  needsStartDate: true,
  run: (ctx) => runExport({ ...ctx.pipeline, lookbackSeconds: ctx.lookbackSeconds, ...(ctx.since !== undefined ? { since: ctx.since } : {}) }),
};

export default job;
