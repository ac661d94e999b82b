/**
 * The scheduled sampled verify (docs/data-quality.md "Verifying against the source"): off unless `verifyCron` is
 * set (e.g. "0 4 * * 0", Sundays at 04:00 in scheduleTimezone). Each run fetches `verifySample`
 * random days of the `verifyRange` before the checkpoint's day again and compares them with the
 * store; with `verifyRepair` it commits what is missing or changed. A run that leaves the store
 * differing from the source fails (its notification and /healthz name the days).
 */
import type { JobContext, JobDefinition } from '../src/scheduler/job.js';
import { runVerify, type VerifyOptions } from '../src/pipeline/run.js';

const DAY = 86_400;

function verifyOptions(ctx: JobContext): VerifyOptions {
  const v = ctx.verify ?? { rangeSeconds: 30 * DAY, sample: 7, repair: false };
  const now = Math.floor((ctx.pipeline.now ?? Date.now)() / 1000);
  return {
    ...ctx.pipeline,
    // The whole days of the range before the checkpoint's day (run.ts clamps to it).
    from: 0,
    to: now,
    beforeCheckpoint: v.rangeSeconds,
    sample: v.sample,
    ...(v.repair ? { repair: true } : {}),
    // Behind a nightly export still going, rather than failing on its lock (up to the wait timeout).
    ...(ctx.pipeline.lock !== false ? { lock: { ...ctx.pipeline.lock, wait: true } } : {}),
  };
}

const job: JobDefinition = {
  name: 'weekly-verify',
  description: 'sampled verify of recent days against the source',
  enabled: ({ verifyCron }) => typeof verifyCron === 'string' && verifyCron !== '',
  schedule: ({ verifyCron, timezone }) => ({ cron: verifyCron ?? '0 4 * * 0', timezone }),
  run: (ctx) => runVerify(verifyOptions(ctx)),
  accountJob: (ctx) => ({ kind: 'verify', opts: verifyOptions(ctx) }),
};

export default job;
