/** Public types of the reporting endpoint emulator; each option and fault is described in docs/emulator.md. */
import type { SessionRecord } from '../schema/session-fields.js';
import type { ArgTypes } from './schema.js';
import type { WindowRule } from './session-dataset.js';
import type { Amendment, HoldBack } from './late-data.js';

export type { Amendment, ArgTypes, HoldBack, WindowRule };

/** The API key the emulator accepts unless `apiKey` is given. */
export const DEFAULT_EMULATOR_API_KEY = 'emulator-reporting-key';

/**
 * Failures the emulator can inject (docs/emulator.md, "Faults"). Rates are probabilities in [0, 1],
 * drawn per request from a PRNG seeded by `seed`, so a given request sequence meets the same faults on every run.
 */
export interface EmulatorFaults {
  latencyMs?: number;
  rateLimitRps?: number;
  serverErrorRate?: number;
  resetRate?: number;
  truncateRate?: number;
  partialErrorRate?: number;
  maxResults?: number;
  maxSpanSeconds?: number;
  truncateResultsTo?: number;
  /** Probability of one fault drawn among `faultKinds` (default all four), on top of the per-kind rates. */
  faultRate?: number;
  faultKinds?: DrawnFaultKind[];
  /** Seconds after the first reporting request; `rateLimitRps` (if set) applies before the first entry. */
  rateLimitSchedule?: Schedule;
  /** Another client of the same account takes this many requests per second of the quota. Needs a quota. */
  sharedQuotaSchedule?: Schedule;
  concurrencyLimit?: number;
  rateLimitHeaders?: 'ietf' | 'x';
  retryAfterFormat?: 'seconds' | 'http-date';
  /** docs/emulator.md, "Late and amended data". */
  holdBack?: HoldBack[];
  amend?: Amendment[];
}

/** The faults `faultRate` can draw. */
export type DrawnFaultKind = 'rateLimited' | 'serverError' | 'reset' | 'truncate';
export const DRAWN_FAULT_KINDS: readonly DrawnFaultKind[] = ['rateLimited', 'serverError', 'reset', 'truncate'];
export const WINDOW_RULES: readonly WindowRule[] = ['closed', 'half-open', 'overlap'];
export const ARG_TYPES: readonly ArgTypes[] = ['Int!', 'Int', 'String!'];

/** One account of a multi-account emulator; see docs/emulator.md, "Several accounts". */
export interface EmulatorAccount {
  /** `[a-z0-9][a-z0-9_-]{0,62}`; name and key unique among the accounts. */
  name: string;
  apiKey: string;
  /** Data seed; default derived from the emulator's `seed` and the name. */
  seed?: number;
  sessionsPerDay?: number;
  from?: number;
  to?: number;
  /** Shorthands for `faults.rateLimitRps` and `faults.latencyMs`; `faults` is laid over the emulator's. */
  rateLimitRps?: number;
  latencyMs?: number;
  faults?: EmulatorFaults;
  revoked?: boolean;
}

/** What tests need to know of one account: its key and its ground truth. */
export interface EmulatorAccountView {
  name: string;
  apiKey: string;
  revoked: boolean;
  seed: number;
  dataset: EmulatorDataset;
}

/** Requests and answers of one account (requests carrying its key, revoked or not). */
export interface EmulatorAccountStats {
  requests: number;
  /** Answers by HTTP status ("200", "401", ...); resets are not answers and are not counted here. */
  byStatus: Record<string, number>;
  /** Injected faults by kind (FAULT_KINDS). */
  faults: Record<string, number>;
  /** Session records in answers that were sent complete (truncated bodies are not counted). */
  recordsServed: number;
}

/** Instants are epoch seconds before 2038 (graphql-js Int); defaults as in docs/emulator.md, "Options". */
export interface EmulatorOptions {
  host?: string;
  port?: number;
  /** Not with `accounts`. */
  apiKey?: string;
  /** Several accounts, each with its own key, data, quota and faults; then only their keys are accepted. */
  accounts?: EmulatorAccount[];
  seed?: number;
  from?: number;
  /** Exclusive; default: data runs up to "now", wherever the clock is. */
  to?: number;
  sessionsPerDay?: number;
  longNotes?: boolean | { loneSurrogateRate?: number };
  /** Fixed until `setNow`; default: the wall clock, read at every request. */
  now?: number;
  windowRule?: WindowRule;
  argTypes?: ArgTypes;
  faults?: EmulatorFaults;
  /** Keep rendered `sessions` bodies by query text; `true` keeps up to 1 GiB. */
  cacheBodies?: boolean | { maxBytes: number };
  /** Receives one line per request. The API key is never part of it. */
  log?: (line: string) => void;
  /** Passed untouched to the interface handler as `ctx.options`. */
  interface?: unknown;
}

export interface EmulatorStats extends EmulatorAccountStats {
  /** Counts every HTTP request received, including those answered by the interface handler. */
  requests: number;
  inFlight: number;
  maxInFlight: number;
  /** With `accounts` only: the same figures per account name. */
  accounts?: Record<string, EmulatorAccountStats>;
}

export interface EmulatorDataset {
  /** Every session whose started lies in [start, end) as the server would return it at the current "now" (sorted by started, then id). */
  sessionsStartedIn(start: number, end: number): SessionRecord[];
  byId(id: string): SessionRecord | undefined;
}

export interface Emulator {
  /** e.g. http://127.0.0.1:PORT/ */
  url: string;
  /** The key accepted; with `accounts`, the first account's. */
  apiKey: string;
  /** With `accounts`: each account, in the order given; otherwise empty. */
  accounts: readonly EmulatorAccountView[];
  /** Throws a RangeError when there is no account of this name. */
  account(name: string): EmulatorAccountView;
  close(): Promise<void>;
  stats(): EmulatorStats;
  resetStats(): void;
  /** Replaces the fault settings (and drops cached bodies); each account's own settings stay laid over them. */
  setFaults(f: EmulatorFaults): void;
  /** Pins the clock: sessions that were running may now be ended (same id) and new ones may appear. */
  setNow(nowSeconds: number): void;
  /** Ground truth for tests; with `accounts`, the first account's. */
  dataset: EmulatorDataset;
}

/** A value that changes during a run: `rps` from `atSeconds` after the first request on. */
export type Schedule = ReadonlyArray<{ atSeconds: number; rps: number }>;
