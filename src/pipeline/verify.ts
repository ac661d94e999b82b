/**
 * `session-etl verify`: a range fetched as a backfill fetches it, but compared with the store
 * (store/range-comparison.ts). What differs from a backfill: the plan (the range, or N random days),
 * the comparison, the repair, and the report (`_verified_days`, the `_runs` row). docs/data-quality.md.
 */
import { join } from 'node:path';
import type { SessionsBody } from '../reporting/sessions-body.js';
import { FILE_MODE } from '../store/layout.js';
import { RangeComparison, type DayComparison } from '../store/range-comparison.js';
import { readDayCounts } from '../store/read-volume-anomalies.js';
import type { SessionStore } from '../store/session-store.js';
import type { VerifiedDay } from '../store/verify-log.js';
import { mergeIntervals } from '../time/intervals.js';
import { isoOf, type Window } from '../time/windows.js';
import type { Logger } from '../util/logger.js';
import { clipText } from '../util/clip-text.js';
import { redact } from '../util/redact.js';
import { rangeArgs, suggestedCommand, type CommandTarget } from '../util/suggested-command.js';
import { writeNewFile } from '../util/temp-file.js';
import { oneLine } from '../util/terminal-text.js';
import { checkedRecords } from './flatten.js';
import { ExitCode } from '../errors.js';
import { RunFailedError } from './errors.js';
import type { Resolved, RunSummary, VerifyOptions } from './options.js';
import type { ExtractOutcome } from './extract.js';
import type { RunTally } from './run-tally.js';

/** A day as verify reports it: what it compared, what it did, and whether the store now holds the source's sessions. */
export type VerifyDay = DayComparison & Pick<VerifiedDay, 'whole' | 'repaired' | 'deleted' | 'equal' | 'storedAfter'>;

/** A day whose removals --delete-missing refused: how many would have gone, and why not. */
export interface RefusedDelete {
  date: string;
  /** Sessions the store holds that the source no longer returned: kept. */
  wouldDelete: number;
  reasons: string[];
}

/** Without --max-delete, a day may lose at most this share of its stored sessions (rounded down) to --delete-missing. */
export const DELETE_BOUND_SHARE = 0.05;

export interface VerifyReport {
  /** The days drawn by --sample (each a window of the plan), or null for the whole range. */
  sampled: string[] | null;
  repair: boolean;
  deleteMissing: boolean;
  /** Every day compared, oldest first. */
  days: VerifyDay[];
  /** The days whose removals were refused (--delete-missing), oldest first; empty otherwise. */
  refused: RefusedDelete[];
  totals: { days: number; source: number; stored: number; missing: number; gone: number; changed: number; repaired: number; deleted: number; differingDays: number };
  /** The store held the source's sessions of every compared day when the verify ended. */
  equal: boolean;
}

export type VerifySummary = RunSummary & { kind: 'verify'; verify: VerifyReport | null };

/** A verify after which the store still differs from the source: a failed run (exit 1) carrying its summary. */
export class VerifyDifferencesError extends RunFailedError {
  override readonly name = 'RunFailedError' as const;
  readonly differences = true;
  /** 5 when --delete-missing refused removals (ExitCode.deletesRefused), else 1. */
  override readonly exitCode: number;
  constructor(
    message: string,
    readonly summary: VerifySummary,
  ) {
    super(message, summary.runId);
    this.exitCode = summary.verify?.refused.length ? ExitCode.deletesRefused : ExitCode.runFailed;
  }
}

/** One fetched window's answer: how many records it held. */
export type WindowAnswer = Window & { count: number };

/**
 * The days whose removals --delete-missing must not make, and why: a source that answers nothing, or
 * cuts its answers at a limit, makes every stored session look gone. Refused: a day the source returned
 * nothing of; one touched by a capped-looking window (the largest count, held by at least half of the
 * answers, two or more: a cap repeats in every full window); one that would lose more than
 * DELETE_BOUND_SHARE. With `maxDelete`, a total instead: up to that many removals in all, beyond it none.
 */
export function refusedDeletes(
  days: readonly DayComparison[],
  answers: readonly WindowAnswer[],
  o: { maxDelete?: number | undefined },
): RefusedDelete[] {
  const candidates = days.filter((d) => d.gone > 0);
  if (!candidates.length) return [];
  if (o.maxDelete !== undefined) {
    const total = candidates.reduce((n, d) => n + d.gone, 0);
    if (total <= o.maxDelete) return [];
    return candidates.map((d) => ({ date: d.date, wouldDelete: d.gone, reasons: [`${total} would go in all, more than --max-delete ${o.maxDelete} allows`] }));
  }
  const largest = Math.max(0, ...answers.map((a) => a.count));
  const atLargest = answers.filter((a) => a.count === largest).length;
  const repeated = largest > 0 && atLargest >= 2 && atLargest * 2 >= answers.length;
  // (An answer of at least maxResultsPerQuery never gets here: the bisection splits it.)
  const capped = repeated ? answers.filter((a) => a.count === largest) : [];
  const out: RefusedDelete[] = [];
  for (const d of candidates) {
    const reasons: string[] = [];
    if (d.source === 0) reasons.push(`the source returned no session of the day while the store holds ${d.stored}`);
    const start = Date.parse(`${d.date}T00:00:00Z`) / 1000;
    const cut = capped.filter((a) => a.start < start + DAY && a.end > start);
    if (cut.length) {
      const n = cut[0]!.count;
      reasons.push(
        `its answer${cut.length > 1 ? 's' : ''} held exactly ${n} records, as ${atLargest} of the ${answers.length} answers did: the source may cut its answers at ${n} ` +
          `(set --max-results-per-query ${n} to have such windows split)`,
      );
    }
    const bound = Math.floor(d.stored * DELETE_BOUND_SHARE);
    if (d.gone > bound) reasons.push(`${d.gone} of its ${d.stored} stored sessions would go, more than ${DELETE_BOUND_SHARE * 100} % of the day (${bound})`);
    if (reasons.length) out.push({ date: d.date, wouldDelete: d.gone, reasons });
  }
  return out;
}

const DAY = 86_400;

/** The windows a verify fetches: the range (clamped to now - settle), or `sample` random days of it. */
export function verifyPlan(
  opts: Pick<VerifyOptions, 'from' | 'to' | 'sample' | 'random' | 'beforeCheckpoint'>,
  nowS: number,
  settle: number,
  checkpoint?: number,
): { range: Window | null; todo: Window[]; sampled: string[] | null } {
  let to = Math.min(opts.to, Math.floor(nowS - settle));
  let from = opts.from;
  if (opts.beforeCheckpoint !== undefined) {
    if (checkpoint === undefined) return { range: null, todo: [], sampled: null };
    to = Math.min(to, Math.floor(checkpoint / DAY) * DAY);
    from = Math.max(from, to - opts.beforeCheckpoint);
  }
  if (from >= to) return { range: null, todo: [], sampled: null };
  const range = { start: from, end: to };
  if (opts.sample === undefined) return { range, todo: [range], sampled: null };
  const days: Window[] = [];
  for (let d = Math.floor(range.start / DAY) * DAY; d < range.end; d += DAY) days.push({ start: Math.max(d, range.start), end: Math.min(d + DAY, range.end) });
  const random = opts.random ?? Math.random;
  // A partial Fisher-Yates shuffle: the first `sample` days are a uniform draw.
  for (let i = 0; i < Math.min(opts.sample, days.length); i++) {
    const j = i + Math.floor(random() * (days.length - i));
    [days[i], days[j]] = [days[j]!, days[i]!];
  }
  const todo = days.slice(0, opts.sample).sort((a, b) => a.start - b.start);
  return { range, todo, sampled: todo.map((w) => isoOf(w.start).slice(0, 10)) };
}

/** One account's verify while it runs: each fetched window to the comparison, then the repair and the report. */
export class AccountVerifier {
  private seq = 0;
  private days: DayComparison[] | undefined;
  private done: { repaired: number; deleted: number } | undefined;
  /** Each fetched window's count of records (the capped-answer check). */
  private readonly answers: WindowAnswer[] = [];
  private refused: RefusedDelete[] = [];

  private constructor(
    private readonly store: SessionStore,
    private readonly comparison: RangeComparison,
    private readonly opts: Resolved<VerifyOptions>,
    private readonly account: string,
    private readonly tally: RunTally,
  ) {}

  static async open(store: SessionStore, account: string, opts: Resolved<VerifyOptions>, tally: RunTally): Promise<AccountVerifier> {
    return new AccountVerifier(store, await RangeComparison.open(store, account), opts, account, tally);
  }

  /**
   * After the windows, before the last flush: the comparison finished and, with `repair`, its commits
   * (not when stopped or failed); its failure is the outcome's error.
   */
  async settleAfter(outcome: ExtractOutcome, logger: Logger): Promise<ExtractOutcome> {
    if (outcome.error || outcome.skipped.length) return outcome;
    try {
      const days = (this.days = await this.comparison.finish());
      // What differs (and what was refused) is told once, by the run's summary and error.
      const differing = days.filter((d) => d.missing + d.gone + d.changed > 0);
      logger.debug({ days: differing.map((d) => d.date) }, `verify: ${differing.length} day(s) differ from the source`);
      if (!this.opts.repair) return outcome;
      const deleteMissing = Boolean(this.opts.deleteMissing);
      if (deleteMissing) this.refused = refusedDeletes(days, this.answers, { maxDelete: this.opts.maxDelete });
      const refused = new Set(this.refused.map((r) => r.date));
      const deleteDays = new Set(days.filter((d) => d.gone > 0 && !refused.has(d.date)).map((d) => d.date));
      this.done = await this.comparison.repair({ runId: this.tally.runId, deleteMissing, deleteDays });
      return outcome;
    } catch (err) {
      return { ...outcome, error: err instanceof Error ? err : new Error(String(err)) };
    }
  }

  /** Hands one fetched window's records to the comparison as a file (validated first as a backfill's are). */
  async add(w: Window, body: SessionsBody, fetchedAtMs: number): Promise<void> {
    const { ndjson: bytes, count, rejected, duplicatesDropped } = checkedRecords(body, this.opts.onInvalid);
    this.tally.totals.rejected += rejected.length;
    this.tally.totals.duplicatesDropped += duplicatesDropped;
    this.answers.push({ start: w.start, end: w.end, count });
    // The records fetched (the progress bar's and the summary's count), as a backfill counts them.
    this.tally.totals.fetched += count;
    const dir = this.store.layout.tmpDir;
    // Named as a commit's record files are: a leftover (a crash) is recognised and removed as one.
    const name = `rows-${String(w.start).padStart(12, '0')}-${process.pid}-${++this.seq}`;
    const file = count > 0 ? await writeNewFile((suffix) => join(dir, `${name}-${suffix}.ndjson`), bytes, { mode: FILE_MODE }) : null;
    await this.comparison.add({ window: w, file, count, extractedAt: fetchedAtMs / 1000 });
  }

  /** The report once the last flush made the repair visible: each day with what was done and holds now, recorded in `_verified_days`. */
  async report(plan: { todo: Window[]; sampled: string[] | null }, nowS: number): Promise<VerifyReport> {
    const compared = new Map((this.days ?? []).map((d) => [d.date, d]));
    const covered = mergeIntervals(plan.todo);
    const after = (await readDayCounts(this.store.conn, this.store, this.account)).get(this.account) ?? new Map<string, number>();
    const repair = Boolean(this.opts.repair);
    const deleteMissing = repair && Boolean(this.opts.deleteMissing);
    const refused = new Set(this.refused.map((r) => r.date));
    const days: VerifyDay[] = [];
    for (const date of planDays(plan.todo)) {
      const d = compared.get(date) ?? { date, source: 0, stored: 0, missing: 0, gone: 0, changed: 0, changedFields: {} };
      const start = Date.parse(`${date}T00:00:00Z`) / 1000;
      const fixed = repair ? d.missing + d.changed : 0;
      const removed = deleteMissing && !refused.has(date) ? d.gone : 0;
      days.push({
        ...d,
        whole: covered.some((w) => w.start <= start && w.end >= start + DAY),
        repaired: fixed,
        deleted: removed,
        equal: d.missing + d.changed - fixed === 0 && d.gone - removed === 0,
        storedAfter: after.get(date) ?? 0,
      });
    }
    // Days of sessions whose start moved out of the plan's days are not verified days; the plan's are.
    await this.store.recordVerifiedDays(this.account, this.tally.runId, nowS, days);
    const sum = (k: 'source' | 'stored' | 'missing' | 'gone' | 'changed' | 'repaired' | 'deleted') => days.reduce((n, d) => n + d[k], 0);
    return {
      sampled: plan.sampled,
      repair,
      deleteMissing,
      days,
      refused: this.refused,
      totals: {
        days: days.length,
        source: sum('source'),
        stored: sum('stored'),
        missing: sum('missing'),
        gone: sum('gone'),
        changed: sum('changed'),
        repaired: this.done?.repaired ?? 0,
        deleted: this.done?.deleted ?? 0,
        differingDays: days.filter((d) => d.missing + d.gone + d.changed > 0).length,
      },
      equal: days.every((d) => d.equal),
    };
  }

  close(): Promise<void> {
    return this.comparison.close();
  }
}

/** The UTC days of the plan's windows, oldest first. */
function planDays(todo: readonly Window[]): string[] {
  const out = new Set<string>();
  for (const w of todo) for (let d = Math.floor(w.start / DAY) * DAY; d < w.end; d += DAY) out.add(isoOf(d).slice(0, 10));
  return [...out].sort();
}

/** A verify's summary whose store still differs from the source at the end, as its error (VerifyDifferencesError); else undefined. */
export function differencesFound(summary: RunSummary): VerifyDifferencesError | undefined {
  const s = summary as VerifySummary;
  return s.kind === 'verify' && s.verify && s.outcome === 'failed' ? new VerifyDifferencesError(s.error ?? 'the store differs from the source', s) : undefined;
}

/**
 * The error of a verify that leaves the store differing: the days and their counts, the removals
 * refused and why, and what to run; one printable line, clipped.
 */
export function differencesError(report: VerifyReport, range: Window, target: CommandTarget): string {
  const command = suggestedCommand('verify', rangeArgs(range), target);
  const refused = new Map(report.refused.map((r) => [r.date, r]));
  const left = report.days.filter((d) => !d.equal);
  const shown = left.slice(0, 10).map((d) => {
    const kept = d.gone - d.deleted;
    const why = refused.get(d.date);
    const parts = [
      !report.repair && d.missing ? `${d.missing} missing` : '',
      !report.repair && d.changed ? `${d.changed} changed` : '',
      kept ? `${kept} no longer returned by the source${why ? `, removal refused (${why.reasons.join('; ')})` : ''}` : '',
    ].filter(Boolean);
    return `${d.date}: ${parts.join(', ')}`;
  });
  const more = left.length > shown.length ? `, and ${left.length - shown.length} more day(s)` : '';
  const toFix = left.some((d) => !report.repair && d.missing + d.changed > 0);
  const wouldDelete = report.refused.reduce((n, r) => n + r.wouldDelete, 0);
  const advice = report.refused.length
    ? `nothing was removed from ${report.refused.length === 1 ? 'that day' : `those ${report.refused.length} days`} (${wouldDelete} session(s) would have gone); ` +
      `if the source is right to have dropped them, allow it with \`${command} --repair --delete-missing --max-delete ${wouldDelete}\``
    : toFix
      ? `make the store equal the source with \`${command} --repair\` (sessions the source no longer returns are removed only with --delete-missing)`
      : `sessions the source no longer returns are kept: remove them with \`${command} --repair --delete-missing\` only if the source is right to have dropped them`;
  return clipText(oneLine(redact(`the store differs from the source on ${left.length} day(s): ${shown.join('; ')}${more}; ${advice}`)));
}
