/** What a run is given (PipelineOptions and the backfill's and export's own), and what it returns (RunSummary). */
import { randomBytes } from 'node:crypto';
import { CONFIG_DEFAULTS } from '../config/defaults.js';
import type { RetryOptions } from '../reporting/defaults.js';
import type { FetchLike } from '../reporting/transport.js';
import type { StoreBusyError } from '../store/errors.js';
import type { SessionStore } from '../store/session-store.js';
import type { VolumeAnomaly, VolumeRule } from '../store/volume-anomalies.js';
import type { MemorySplit } from '../config/memory-budget.js';
import type { OutputFormat, ShardId } from '../store/layout.js';
import type { DatasetLocation } from '../store/dataset/location.js';
import type { LockHolder } from '../store/lock.js';
import { parseDuration } from '../time/windows.js';
import type { Logger } from '../util/logger.js';
import type { Sleep } from '../util/sleep.js';
import type { InvalidPolicy } from './flatten.js';
import type { AnswerBytes } from './answer-bytes.js';

export interface PipelineOptions {
  /** Reporting endpoint (REPORTING_URL). */
  reportingUrl: string;
  /** Reporting API key (REPORTING_API_KEY). */
  apiKey: string;
  /** Where the key came from (an account's apiKeyEnv or apiKeyFile), named when the endpoint refuses it. */
  apiKeySource?: string;
  /** Where the reporting URL is set (REPORTING_URL, the configuration file, an account's entry), named when its first connection is refused. */
  reportingUrlSource?: string;
  dataDir: string;
  /** Where the Parquet dataset goes: `s3://BUCKET/PREFIX` (docs/object-storage.md), else the data directory's parquet/sessions/. */
  parquetUrl?: string;
  /** Path-style addressing for the bucket (MinIO-style and test servers). */
  s3PathStyle?: boolean;
  /** What to write. Default: the format recorded on the first run (a new one: both); another is refused (exit 2). */
  format?: OutputFormat;
  /** Chunk length in seconds. Default 1 day. */
  chunkSeconds?: number;
  /** Maximum concurrent requests. Default 4. */
  concurrency?: number;
  /** A window returning at least this many records is split (the server may cap silently). */
  maxResultsPerQuery?: number;
  /** Smallest window bisection may produce, seconds. Default 60. */
  minChunkSeconds?: number;
  /** Never fetch closer to now than this, seconds. Default 600. */
  settleSeconds?: number;
  /** `fail` (default): an invalid record fails its window; `quarantine`: it goes to rejected_sessions. */
  onInvalid?: InvalidPolicy;
  /** Fetch the most recent windows first. */
  newestFirst?: boolean;
  /** Upper bound on requests per second (besides the rate learned from 429s). */
  maxRequestsPerSecond?: number;
  /** Per-request timeout, ms. Default 60 000. */
  timeoutMs?: number;
  /** Largest answer body, bytes; a larger one splits its window. Default 256 MiB, and at most the memory budget's share. */
  maxBodyBytes?: number;
  /** The memory budget set (`name` says where); the run's is the smaller of it and the container's (config/memory-budget.ts). */
  memoryLimit?: { value: string | number; name: string };
  retry?: Partial<RetryOptions>;
  /** Rewrite pending Parquet partitions at least this often during a run, seconds. Default 60. */
  parquetFlushSeconds?: number;
  fetch?: FetchLike;
  /** Clock, ms since the epoch. */
  now?: () => number;
  sleep?: Sleep;
  logger?: Logger;
  /** Soft stop: no new windows start; running ones finish and commit. */
  stopSignal?: AbortSignal;
  /** Hard stop: running requests are aborted (nothing half-written is committed). */
  abortSignal?: AbortSignal;
  /** Exit code to report when stopped by a signal (130 or 143). */
  stopExitCode?: number;
  onProgress?: (p: Progress) => void;
  /** Run id (generated when absent). */
  runId?: string;
  /** The volume-anomaly rule judged after the run (default: the configuration's defaults; docs/data-quality.md "Volume anomalies"). */
  volumeRule?: VolumeRule;
  /** The one-writer lock. Default: taken, failing at once when held (exit 3); `{ wait: true }` queues; `false`: the caller holds it. */
  lock?:
    | false
    | {
        wait?: boolean;
        /** How long --wait waits for the lock, and then for readers to close the DuckDB file, ms (default: forever). */
        waitTimeoutMs?: number;
        onWait?: (holder: LockHolder | undefined) => void;
        /** Called once when the DuckDB file is found held by another process (a reader) and the run waits. */
        onStoreBusy?: (err: StoreBusyError) => void;
      };
}

/** What a run over a store shares between its accounts (runBatch); a single-account run's are its own options. */
export interface BatchOptions
  extends Pick<
    PipelineOptions,
    | 'dataDir' | 'format' | 'lock' | 'stopSignal' | 'abortSignal' | 'stopExitCode' | 'logger' | 'now' | 'sleep' | 'parquetFlushSeconds' | 'onProgress'
    | 'volumeRule' | 'memoryLimit'
  > {
  /** One account's store, or many accounts' (docs/accounts.md). */
  accounts: 'single' | 'many';
  /** Shard I of N of a many-account data directory: its own store. */
  shard?: ShardId;
  /** Where the day files go: the data directory's parquet/sessions/ (default), or a bucket (docs/object-storage.md). */
  dataset?: DatasetLocation;
  /** Accounts run side by side. Default 1. */
  concurrency?: number;
  /** The run's memory split (set by runBatch from memoryLimit and the container: pipeline/resolve-options.ts planMemory). */
  memory?: MemorySplit;
  /** Work on the store once it is taken and recovered, before any account fetches (moving accounts in: accounts/bring-in.ts). */
  prepare?: (store: SessionStore) => Promise<void>;
}

type Job<B, E, V> = ({ account: string; kind: 'backfill'; opts: B } | { account: string; kind: 'export'; opts: E } | { account: string; kind: 'verify'; opts: V }) & {
  refused?: Error;
};

/**
 * One account's part of a run over a store ('' for a single-account store). `refused`: it cannot
 * run (its key could not be read, say): recorded as a failed run with this error, nothing fetched.
 */
export type AccountJob = Job<BackfillOptions, ExportOptions, VerifyOptions>;

/** How one account's part of a run ended: its summary, or (not ok) its error (which may carry a summary). */
export interface AccountResult {
  account: string;
  ok: boolean;
  summary?: RunSummary;
  error?: unknown;
  durationMs: number;
}

export interface BackfillOptions extends PipelineOptions {
  /** Range start, epoch seconds (inclusive). */
  from: number;
  /** Range end, epoch seconds (exclusive); clamped to now - settle. */
  to: number;
}

export interface ExportOptions extends PipelineOptions {
  /** Where the first export starts when nothing is stored yet, epoch seconds. */
  since?: number;
  /** Warn when `since` is not used because of a checkpoint (a `--since` given; a configured startDate is for the first run only). */
  warnIfSinceUnused?: boolean;
  /** How far before the checkpoint each export re-reads, seconds. Default 1 day. */
  lookbackSeconds?: number;
}

/** A verify's range is a backfill's. */
export interface VerifyOptions extends BackfillOptions {
  /** Verify this many random days of the range (each day as far as it lies in the range). */
  sample?: number;
  /** The draw of `sample` (tests); default Math.random. */
  random?: () => number;
  /** Make the store equal the source: commit what is missing or changed. */
  repair?: boolean;
  /** With repair: also remove the sessions the source no longer returns (each day within the checks of `refusedDeletes`). */
  deleteMissing?: boolean;
  /** With deleteMissing: remove up to this many in all, whatever `refusedDeletes` says (more: nothing is removed). */
  maxDelete?: number;
  /** Only the whole days of this many seconds before the checkpoint's day (the scheduled verify); nothing stored: nothing to verify. */
  beforeCheckpoint?: number;
}

export interface Progress {
  windowsTotal: number;
  windowsDone: number;
  sessions: number;
}

export interface RunSummary {
  runId: string;
  /** `verify`: a VerifySummary (verify.ts), the run's figures with what it found. */
  kind: 'backfill' | 'export' | 'verify';
  outcome: 'succeeded' | 'failed' | 'interrupted' | 'nothing-to-do';
  range: { from: string; to: string } | null;
  resumed: boolean;
  windows: { total: number; done: number; skipped: number };
  /**
   * `written`: new or updated (content differs); unchanged ones (re-read as stored) are not written.
   * `fetched`: records the windows committed; `repeated`: those another window had brought already.
   * fetched = written + unchanged + repeated.
   */
  sessions: {
    written: number;
    new: number | null;
    updated: number | null;
    /** Absent in summaries made by versions before it was counted. */
    unchanged?: number | null;
    fetched?: number;
    /** Absent in summaries made by versions before it was counted. */
    repeated?: number;
    rejected: number;
    duplicatesDropped: number;
  };
  requests: number;
  retries: number;
  rateLimited: number;
  /** Time all workers spent paused by 429s (Retry-After) or by rate-limit headers, ms. */
  pausedMs: number;
  /** The pace learned from 429s, requests per second (before probing past it); null when never limited. */
  pace: number | null;
  bisections: number;
  durationMs: number;
  checkpoint: string | null;
  coverageHoles: Array<{ from: string; to: string }>;
  /** `removed`: a first run that committed nothing removed what it had created (no file is left to name). */
  files: {
    dataDir: string;
    duckdb: string | null;
    parquet: string | null;
    /** Day partitions whose Parquet file this run rewrote (changed sessions, or left by an earlier run). */
    partitionsWritten: string[];
    /** Of those, the ones an earlier run left unfinished (absent when none). */
    partitionsRecovered?: string[];
    removed?: boolean;
  };
  error?: string;
  /** The account's volume anomalies after the run (docs/data-quality.md "Volume anomalies"); absent when not read (the check off). */
  volumeAnomalies?: VolumeAnomaly[];
}

/** What a library run uses when an option is not given: the configuration's defaults (config/defaults.ts). */
export const DEFAULTS = {
  chunkSeconds: parseDuration(CONFIG_DEFAULTS.chunk),
  concurrency: CONFIG_DEFAULTS.concurrency,
  minChunkSeconds: parseDuration(CONFIG_DEFAULTS.minChunk),
  settleSeconds: parseDuration(CONFIG_DEFAULTS.settle),
  lookbackSeconds: parseDuration(CONFIG_DEFAULTS.lookback),
  parquetFlushSeconds: 60,
  maxBodyBytes: CONFIG_DEFAULTS.maxBodyBytes,
  timeoutMs: parseDuration(CONFIG_DEFAULTS.requestTimeout) * 1000,
  onInvalid: CONFIG_DEFAULTS.onInvalid,
  /** The exit code a run stopped by a signal reports when the caller names none (SIGINT's). */
  stopExitCode: 130,
} as const;

/** The exit code to report when stopped, read when the stop is reported (a signal handler may set it late). */
type StopExitCode = { stopExitCode: () => number };

/** What resolveJob (resolve-options.ts) fills in: given, taken from the batch, or defaulted. Nothing below runBatch defaults again. */
type Defaulted = Required<
  Pick<PipelineOptions, 'chunkSeconds' | 'concurrency' | 'minChunkSeconds' | 'settleSeconds' | 'onInvalid' | 'timeoutMs' | 'maxBodyBytes' | 'now' | 'sleep' | 'logger'>
> & { retry: RetryOptions } & StopExitCode;

/** A run's options with every default applied. */
export type Resolved<O extends PipelineOptions> = Omit<O, keyof Defaulted> & Defaulted;

/** An account's job as the run reads it (resolveJob). */
export type ResolvedJob = Job<Resolved<BackfillOptions>, Resolved<ExportOptions> & { lookbackSeconds: number }, Resolved<VerifyOptions>>;

/** The batch's options with every default applied (resolveBatch), its memory split, and the answers' bytes it bounds (one for all accounts). */
export type ResolvedBatch = Omit<BatchOptions, 'stopExitCode'> &
  Required<Pick<BatchOptions, 'now' | 'sleep' | 'logger' | 'parquetFlushSeconds' | 'concurrency' | 'volumeRule' | 'memory'>> &
  StopExitCode & { answers: AnswerBytes };

export function newRunId(kind: string, nowMs: number): string {
  const ts = new Date(nowMs).toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${kind}-${ts}-${randomBytes(3).toString('hex')}`;
}

