/**
 * A run's memory budget applied to its jobs (config/memory-budget.ts): worked out before anything is
 * opened, so that a budget too small to work in is refused (exit 2) with nothing written; each
 * job's largest body is capped by the budget's share, and the split is logged (debug).
 */
import { describeSplit, glibcSettingsMissing, resolveMemory, type MemoryBudget, type MemorySplit } from '../config/memory-budget.js';
import { checkWriterSettings } from '../store/session-store.js';
import type { Logger } from '../util/logger.js';
import type { BatchOptions, ResolvedJob } from './options.js';

export interface MemoryPlan {
  budget: MemoryBudget;
  split: MemorySplit;
  /** The jobs, each with maxBodyBytes at most the budget's per-body share. */
  jobs: ResolvedJob[];
}

/** Works out the batch's budget and split (throws MemoryBudgetError, exit 2, below the minimum). */
export function planMemory(batch: Pick<BatchOptions, 'memoryLimit'> & { concurrency: number }, jobs: readonly ResolvedJob[], logger: Logger, root?: string): MemoryPlan {
  // SESSION_ETL_DUCKDB_MEMORY_LIMIT as DuckDB takes it, refused with the store's own message first.
  checkWriterSettings();
  const running = jobs.filter((j) => !j.refused);
  const side = Math.max(1, Math.min(batch.concurrency, running.length));
  // Requests in flight: the accounts that run side by side, each with its own concurrency (the largest, to be safe).
  const perAccount = Math.max(1, ...running.map((j) => j.opts.concurrency));
  const maxBodyBytes = Math.max(...running.map((j) => j.opts.maxBodyBytes), 1);
  const { budget, split } = resolveMemory({
    setting: batch.memoryLimit,
    concurrency: side * perAccount,
    maxBodyBytes,
    duckdbOverride: process.env.SESSION_ETL_DUCKDB_MEMORY_LIMIT || undefined,
    ...(root ? { root } : {}),
  });
  logger.debug({ memory: { ...split, from: budget.from } }, `memory budget: ${describeSplit(budget, split)}`);
  const unset = process.platform === 'linux' ? glibcSettingsMissing() : [];
  if (unset.length) logger.debug({ unset }, `glibc's allocator keeps freed memory: ${unset.join(' ')} not set (docs/configuration.md "glibc's allocator")`);
  const capped = jobs.map((j) => (j.opts.maxBodyBytes > split.maxBodyBytes ? ({ ...j, opts: { ...j.opts, maxBodyBytes: split.maxBodyBytes } } as ResolvedJob) : j));
  return { budget, split, jobs: capped };
}
