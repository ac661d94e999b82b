/** A scheduled job: one file per job under jobs/, default-exporting a JobDefinition. */
import type { BackfillOptions, ExportOptions, PipelineOptions, RunSummary, VerifyOptions } from '../pipeline/run.js';

export interface JobContext {
  /** Pipeline options from the effective configuration (endpoint, key, data directory, limits, logger, signals). */
  pipeline: PipelineOptions;
  /** Where a first export starts when nothing is stored yet (config startDate), epoch seconds. */
  since?: number;
  /** Export lookback, seconds. */
  lookbackSeconds: number;
  /** The scheduled verify's settings (config verifyRange, verifySample, verifyRepair; jobs/weekly-verify.ts). */
  verify?: { rangeSeconds: number; sample: number; repair: boolean };
}

export interface JobSettings {
  /** Cron expression from the configuration (scheduleCron). */
  cron: string;
  /** IANA time zone from the configuration (scheduleTimezone). */
  timezone: string;
  /** When the scheduled verify runs (config verifyCron); null or absent: it does not. */
  verifyCron?: string | null;
}

export interface JobDefinition {
  name: string;
  description: string;
  /** The cron expression (node-cron syntax, optional seconds field) and time zone, given the configured ones. */
  schedule(settings: JobSettings): { cron: string; timezone: string };
  run(ctx: JobContext): Promise<RunSummary>;
  /** Whether the job runs under these settings (default: it does); a job that does not is neither scheduled nor run by --run-now. */
  enabled?(settings: JobSettings): boolean;
  /** With many accounts (docs/accounts.md): one account's part of the job, given its context; without it, no accounts. */
  accountJob?(ctx: JobContext): { kind: 'export'; opts: ExportOptions } | { kind: 'backfill'; opts: BackfillOptions } | { kind: 'verify'; opts: VerifyOptions };
  /**
   * An incremental export, whose first run needs a start (startDate): `schedule` refuses (exit 2) a
   * data directory with nothing stored and no startDate, where the job would fail every night.
   */
  needsStartDate?: boolean;
}
