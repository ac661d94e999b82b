/** What a run counts while it goes, and what it records from those counts: its `_runs` row and its summary. */
import { checkpointOf, holes } from '../time/intervals.js';
import { isoOf, type Window } from '../time/windows.js';
import type { FlushResult } from '../store/session-store.js';
import type { RunRow } from '../store/run-log.js';
import type { ExtractStats } from './extract.js';
import type { RunSummary } from './options.js';

export class RunTally {
  readonly stats: ExtractStats = { requests: 0, retries: 0, rateLimited: 0, bisections: 0, windowsDone: 0 };
  /** `fetched` counts as the windows commit; the rest are known once merged, at the end (RunSummary['sessions']). */
  readonly totals = { fetched: 0, written: 0, inserted: 0, updated: 0, unchanged: 0, repeated: 0, rejected: 0, duplicatesDropped: 0 };
  readonly partitionsWritten = new Set<string>();
  /** Of those, the partitions whose rewrite an earlier run left unfinished (done first by this one). */
  readonly partitionsRecovered = new Set<string>();
  /** Merges of this run that are counted already (background and periodic flushes). */
  private readonly flushed = { inserted: 0, updated: 0, unchanged: 0 };
  range: Window | null = null;

  constructor(
    readonly runId: string,
    readonly kind: 'backfill' | 'export' | 'verify',
    readonly startedMs: number,
    readonly account: string,
  ) {}

  /** A flush during the run: its partitions and this account's new/updated counts. */
  addFlush(r: FlushResult): void {
    r.partitions.forEach((p) => this.partitionsWritten.add(p));
    const c = r.counts.get(this.account);
    if (!c) return;
    this.flushed.inserted += c.inserted;
    this.flushed.updated += c.updated;
    this.flushed.unchanged += c.unchanged;
  }

  /** Partitions an earlier run left to rewrite, rewritten before this one fetched anything. */
  addRecovered(partitions: readonly string[]): void {
    partitions.forEach((p) => (this.partitionsWritten.add(p), this.partitionsRecovered.add(p)));
  }

  /** The run's last flush: sessions stored by this run are new, or replace a version stored before it (each counted once). */
  addLastFlush(r: FlushResult): void {
    this.addFlush(r);
    Object.assign(this.totals, this.flushed);
    // Re-read as stored is not written: nothing of the session changed (issue 42).
    this.totals.written = this.totals.inserted + this.totals.updated;
    this.totals.repeated = Math.max(0, this.totals.fetched - this.totals.written - this.totals.unchanged);
  }

  /** The run's `_runs` row as it stands (outcome `running`, until the end). */
  row(): RunRow {
    return {
      run_id: this.runId,
      account: this.account,
      kind: this.kind,
      range_from: this.range?.start ?? null,
      range_to: this.range?.end ?? null,
      started_at: this.startedMs / 1000,
      ended_at: null,
      outcome: 'running',
      windows: this.stats.windowsDone,
      sessions_written: this.totals.written,
      sessions_new: this.totals.inserted,
      sessions_updated: this.totals.updated,
      sessions_unchanged: this.totals.unchanged,
      rejected: this.totals.rejected,
      requests: this.stats.requests,
      retries: this.stats.retries,
      rate_limited: this.stats.rateLimited,
      bisections: this.stats.bisections,
      partitions_written: this.partitionsWritten.size,
      error: null,
    };
  }

  /** The row of a run that failed before it could be summarised (range and new/updated unknown). */
  failedRow(endedS: number, error: string): RunRow {
    return {
      ...this.row(),
      range_from: null,
      range_to: null,
      ended_at: endedS,
      outcome: 'failed',
      sessions_new: null,
      sessions_updated: null,
      sessions_unchanged: null,
      error,
    };
  }

  summary(
    s: Pick<RunSummary, 'outcome' | 'resumed' | 'pausedMs' | 'pace'> & {
      windowsTotal: number;
      skipped: number;
      coverage: readonly Window[];
      nowMs: number;
      files: Omit<RunSummary['files'], 'partitionsWritten'>;
      error: string | undefined;
    },
  ): RunSummary {
    const cp = checkpointOf(s.coverage);
    return {
      runId: this.runId,
      kind: this.kind,
      outcome: s.outcome,
      range: this.range ? { from: isoOf(this.range.start), to: isoOf(this.range.end) } : null,
      resumed: s.resumed,
      windows: { total: s.windowsTotal, done: this.stats.windowsDone, skipped: s.skipped },
      sessions: {
        written: this.totals.written,
        new: this.totals.inserted,
        updated: this.totals.updated,
        unchanged: this.totals.unchanged,
        fetched: this.totals.fetched,
        repeated: this.totals.repeated,
        rejected: this.totals.rejected,
        duplicatesDropped: this.totals.duplicatesDropped,
      },
      requests: this.stats.requests,
      retries: this.stats.retries,
      rateLimited: this.stats.rateLimited,
      pausedMs: Math.round(s.pausedMs),
      pace: s.pace,
      bisections: this.stats.bisections,
      durationMs: s.nowMs - this.startedMs,
      checkpoint: cp !== undefined ? isoOf(cp) : null,
      coverageHoles: holes(s.coverage).map((h) => ({ from: isoOf(h.start), to: isoOf(h.end) })),
      files: {
        ...s.files,
        partitionsWritten: [...this.partitionsWritten].sort(),
        ...(this.partitionsRecovered.size ? { partitionsRecovered: [...this.partitionsRecovered].sort() } : {}),
      },
      ...(s.error ? { error: s.error } : {}),
    };
  }
}
