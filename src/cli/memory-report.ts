/** The memory budget a run would have, for `session-etl config` (config/memory-budget.ts). */
import type { LoadedConfig } from '../config/load.js';
import { chooseBudget, describeSplit, MemoryBudgetError, parseSize, readCgroupLimit, splitBudget } from '../config/memory-budget.js';
import { memorySettingName } from './run-options.js';

export function memoryReport(loaded: LoadedConfig): { text: string; json: Record<string, unknown> } {
  const c = loaded.config;
  const name = memorySettingName(loaded);
  const setting = c.memoryLimit !== null && c.memoryLimit !== undefined ? { bytes: parseSize(c.memoryLimit, name), name } : undefined;
  const budget = chooseBudget(readCgroupLimit(), setting);
  try {
    const split = splitBudget(budget, { concurrency: c.concurrency, maxBodyBytes: c.maxBodyBytes, duckdbOverride: process.env.SESSION_ETL_DUCKDB_MEMORY_LIMIT || undefined });
    return { text: describeSplit(budget, split), json: { ...budget, split } };
  } catch (err) {
    // Too small to run in: shown here, refused by a run (exit 2).
    if (!(err instanceof MemoryBudgetError)) throw err;
    return { text: `${err.message.replace('; nothing was written', '')} (a run refuses to start, exit 2)`, json: { ...budget, refused: err.message } };
  }
}
