/** A run's second step, for each account: what to fetch (a backfill's, an export's or a verify's range), cut into windows. */
import { ExitCode } from '../errors.js';
import type { SessionStore } from '../store/session-store.js';
import { checkpointOf, subtractIntervals } from '../time/intervals.js';
import { checkPlanSize, cutWindows, isoOf, type Window } from '../time/windows.js';
import { rangeArgs, suggestedCommand, type CommandTarget } from '../util/suggested-command.js';
import type { ExportOptions, ResolvedJob } from './options.js';
import { verifyPlan } from './verify.js';

export interface Plan {
  range: Window | null;
  todo: Window[];
  resumed: boolean;
  backfill?: Window;
  /** A verify's days drawn by --sample. */
  sampled?: string[] | null;
}

export const FIRST_RUN_MESSAGE =
  'nothing has been exported to this data directory yet: give the first export a start with --since 2026-01-01 ' +
  '(or startDate in the configuration), or load history with `session-etl backfill --from … --to …`';

export class FirstRunNeedsSinceError extends Error {
  override readonly name = 'FirstRunNeedsSinceError';
  readonly exitCode = ExitCode.usage;
}

/** An account's windows to fetch: a backfill's range (less what an interrupted run of it committed), or an export's. */
export async function planOf(store: SessionStore, job: ResolvedJob, nowS: number): Promise<Plan> {
  const settle = job.opts.settleSeconds;
  if (job.kind === 'verify') {
    const cp = job.opts.beforeCheckpoint !== undefined ? checkpointOf(await store.coverage(job.account)) : undefined;
    return { ...verifyPlan(job.opts, nowS, settle, cp), resumed: false };
  }
  if (job.kind === 'backfill') {
    const to = Math.min(job.opts.to, Math.floor(nowS - settle));
    const from = job.opts.from;
    if (from >= to) {
      job.opts.logger.warn({ settleEnd: isoOf(to) }, `nothing to fetch: the whole range starts at or after now - settle (${isoOf(to)}); sessions that recent are not fetched yet`);
      return { range: null, todo: [], resumed: false };
    }
    if (to < job.opts.to) job.opts.logger.warn({ to: isoOf(to) }, `--to is later than now - settle; the backfill stops at ${isoOf(to)}`);
    const range = { start: from, end: to };
    const open = await store.openBackfill(job.account, range);
    let todo: Window[] = [range];
    if (open) todo = subtractIntervals(range, await store.coverageSince(job.account, open.startedAtMs));
    return { range, todo, resumed: Boolean(open), backfill: range };
  }
  return exportPlan(store, job.account, job.opts, nowS);
}

/** An export's range: from the checkpoint less the lookback (or `since` on the first run) to now - settle. */
async function exportPlan(store: SessionStore, account: string, opts: Extract<ResolvedJob, { kind: 'export' }>['opts'], nowS: number): Promise<Plan> {
  const to = Math.floor(nowS - opts.settleSeconds);
  const checkpoint = checkpointOf(await store.coverage(account));
  let from: number;
  if (checkpoint === undefined) {
    if (opts.since === undefined) throw new FirstRunNeedsSinceError(FIRST_RUN_MESSAGE);
    from = opts.since;
  } else {
    from = checkpoint - opts.lookbackSeconds;
    if (opts.since !== undefined && opts.since < from && opts.warnIfSinceUnused) {
      opts.logger.warn(
        { since: isoOf(opts.since), checkpoint: isoOf(checkpoint) },
        `--since ${isoOf(opts.since)} is not used: this data directory has a checkpoint (${isoOf(checkpoint)}), and an export ` +
          `continues from it (less the lookback, from ${isoOf(from)}); to load or re-read what is before, run ` +
          `\`${resumeCommand({ start: opts.since, end: from }, store, account)}\``,
      );
    }
    if (opts.since !== undefined) from = Math.max(from, Math.min(opts.since, checkpoint));
  }
  if (from >= to) return { range: null, todo: [], resumed: false };
  const range = { start: from, end: to };
  return { range, todo: [range], resumed: false };
}

/** Refuses, before anything is written, a first export without `since` or whose [since, now - settle) is too large to plan. */
export function checkFirstExport(opts: Pick<ExportOptions, 'since'> & { now: () => number; settleSeconds: number; chunkSeconds: number }, stored: boolean): void {
  if (stored) return;
  if (opts.since === undefined) throw new FirstRunNeedsSinceError(FIRST_RUN_MESSAGE);
  const to = Math.floor(opts.now() / 1000 - opts.settleSeconds);
  if (opts.since < to) checkPlanSize([{ start: opts.since, end: to }], opts.chunkSeconds);
}

/** The plan cut into windows (bounded: checkPlanSize), newest first when asked. */
export function windowsOf(p: Plan, opts: { chunkSeconds: number; newestFirst?: boolean | undefined }): Window[] {
  checkPlanSize(p.todo, opts.chunkSeconds);
  const windows = p.todo.flatMap((w) => cutWindows(w.start, w.end, opts.chunkSeconds));
  if (opts.newestFirst) windows.reverse();
  return windows;
}

/** The backfill command that loads `range` into this store (an account's part of it with many accounts). */
export function resumeCommand(range: Window, store: SessionStore, account: string): string {
  return suggestedCommand('backfill', rangeArgs(range), targetOf(store, account));
}

/** What a command suggested for an account of this store runs against. */
export function targetOf(store: SessionStore, account: string): CommandTarget {
  return { dataDir: store.layout.dataDir, account: account || undefined };
}
