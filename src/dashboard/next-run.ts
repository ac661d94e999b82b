/** When `session-etl schedule` runs the nightly export next, under the configured cron and time zone. */
import { createTask } from 'node-cron';

export function nextScheduledRun(cron: string, timezone: string, nowMs: number): { at: string; cron: string; timezone: string } | null {
  try {
    const task = createTask(cron, () => {}, { timezone });
    try {
      const next = task.getNextRuns(2).find((d) => d.getTime() > nowMs);
      return next ? { at: next.toISOString(), cron, timezone } : null;
    } finally {
      void task.destroy();
    }
  } catch {
    return null;
  }
}
