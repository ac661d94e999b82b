/** Public types of the reporting endpoint emulator; see docs/emulator.md. */
import type { SessionRecord } from '../schema/session-fields.js';
import type { ArgTypes } from './schema.js';
import type { WindowRule } from './session-dataset.js';
import type { Amendment, HoldBack } from './late-data.js';

export type { Amendment, HoldBack };

export type { ArgTypes, WindowRule };

/** The API key the emulator accepts unless `apiKey` is given. */
export const DEFAULT_EMULATOR_API_KEY = 'emulator-reporting-key';

/**
 * Failures the emulator can inject. Rates are probabilities in [0, 1], drawn per request from a
 * PRNG seeded by `seed`, so a given request sequence meets the same faults on every run.
 */
export interface EmulatorFaults {
  /** Added before every answer (reporting requests, including 401/429/405 answers). */
  latencyMs?: number;
  /** Requests per second accepted per sliding window; beyond it: 429 with Retry-After (integer seconds >= 1) and a JSON body. */
  rateLimitRps?: number;
  /** Probability of an HTTP 500 (JSON body), 502 or 503 (plain-text proxy pages), chosen at random among the three. */
  serverErrorRate?: number;
  /** Probability that the socket is destroyed without any answer. */
  resetRate?: number;
  /** Probability of a 200 whose body is cut in the middle (Content-Length matches the cut body, so only the JSON is broken). */
  truncateRate?: number;
  /** Probability that a `sessions` answer holds only the first half of the records plus an `errors` entry. */
  partialErrorRate?: number;
  /** A `sessions` window with more records answers 200 {errors:[{message: "... exceeds the maximum result size of N ..."}], data: null}. */
  maxResults?: number;
  /** A `sessions` window with end - start larger answers 200 {errors:[{message: "... span ... exceeds ..."}], data: null}. */
  maxSpanSeconds?: number;
  /** Silently return only the first N records of a window (sorted by started, then id). */
  truncateResultsTo?: number;
  /**
   * Probability that a reporting request meets one fault drawn among `faultKinds`, each equally
   * likely (on top of the per-kind rates above). With `faultKinds: ['rateLimited']`: stray 429s
   * (Retry-After 1 s) unrelated to how fast the client sends.
   */
  faultRate?: number;
  /** The kinds `faultRate` draws from; default all four. */
  faultKinds?: DrawnFaultKind[];
  /** The quota (requests per second) changes at these times, seconds after the first reporting request; `rateLimitRps` (if set) applies before the first entry. */
  rateLimitSchedule?: Schedule;
  /** Another client of the same account takes this many requests per second of the quota, changing at these times (seconds after the first request). Needs a quota. */
  sharedQuotaSchedule?: Schedule;
  /** 429 (Retry-After 1 s) to a reporting request that arrives while this many are already in flight. */
  concurrencyLimit?: number;
  /** Rate-limit headers on every reporting answer while a quota is set: 'ietf' (RateLimit-Limit/-Remaining/-Reset, seconds) or 'x' (X-RateLimit-*, reset as epoch seconds). */
  rateLimitHeaders?: 'ietf' | 'x';
  /** How 429 answers state Retry-After: 'seconds' (default) or 'http-date'. */
  retryAfterFormat?: 'seconds' | 'http-date';
  /**
   * Part of a day's sessions missing from every answer (`session`, `sessions`, `dataset`) until
   * released by the clock or a number of requests (docs/emulator.md, "Late and amended data").
   */
  holdBack?: HoldBack[];
  /** Sessions changed after the fact (their notes amended), from a time or a number of requests on. */
  amend?: Amendment[];
}

/** The faults `faultRate` can draw. */
export type DrawnFaultKind = 'rateLimited' | 'serverError' | 'reset' | 'truncate';
export const DRAWN_FAULT_KINDS: readonly DrawnFaultKind[] = ['rateLimited', 'serverError', 'reset', 'truncate'];
export const WINDOW_RULES: readonly WindowRule[] = ['closed', 'half-open', 'overlap'];
export const ARG_TYPES: readonly ArgTypes[] = ['Int!', 'Int', 'String!'];

/**
 * One account of a multi-account emulator: its own key, its own seeded data and its own quota and
 * faults (counted apart from every other account's). See docs/emulator.md, "Several accounts".
 */
export interface EmulatorAccount {
  /** `[a-z0-9][a-z0-9_-]{0,62}`, unique. */
  name: string;
  /** The key of this account, unique among the accounts. */
  apiKey: string;
  /** Data seed; default derived from the emulator's `seed` and the name. */
  seed?: number;
  /** Default: the emulator's `sessionsPerDay`. */
  sessionsPerDay?: number;
  /** Default: the emulator's `from`. */
  from?: number;
  /** Default: the emulator's `to`. */
  to?: number;
  /** This account's quota (requests per second); shorthand for `faults.rateLimitRps`. */
  rateLimitRps?: number;
  /** Delay before each answer to this account; shorthand for `faults.latencyMs`. */
  latencyMs?: number;
  /** Fault settings laid over the emulator's `faults` for this account only. */
  faults?: EmulatorFaults;
  /** The key is refused with 401 ("This API key has been revoked."). */
  revoked?: boolean;
}

/** What tests need to know of one account: its key and its ground truth. */
export interface EmulatorAccountView {
  name: string;
  apiKey: string;
  revoked: boolean;
  /** The seed its data was made from. */
  seed: number;
  dataset: EmulatorDataset;
}

/** Requests and answers of one account (requests carrying its key, revoked or not). */
export interface EmulatorAccountStats {
  requests: number;
  byStatus: Record<string, number>;
  faults: Record<string, number>;
  recordsServed: number;
}

export interface EmulatorOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (OS-assigned). */
  port?: number;
  /** The one key accepted in the Authorization header; default DEFAULT_EMULATOR_API_KEY. Not with `accounts`. */
  apiKey?: string;
  /**
   * Several accounts, each with its own key, data, quota and faults; then only their keys are
   * accepted. Without it: one account with `apiKey`, exactly as before.
   */
  accounts?: EmulatorAccount[];
  /** Data and fault seed; default 1. */
  seed?: number;
  /** Epoch seconds, first instant with data; default: now - 90 days, at UTC midnight. */
  from?: number;
  /** Epoch seconds, end of data (exclusive); default: data runs up to "now", wherever the clock is. */
  to?: number;
  /** Average sessions per day over a week; default 200. */
  sessionsPerDay?: number;
  /**
   * `externalFields.notes` of 1–2 KB with quotes, backslashes, newlines, tabs, control characters,
   * non-ASCII and emoji instead of the short notes (same sessions otherwise, deterministic from the
   * seed). `{ loneSurrogateRate }` also ends that share of the notes with a lone UTF-16 surrogate
   * escape (`\ud83d`), which JSON allows and UTF-8 cannot hold. Default false.
   */
  longNotes?: boolean | { loneSurrogateRate?: number };
  /**
   * The emulator's "now" in epoch seconds, fixed until `setNow`. Default: the wall clock, read at
   * every request (so a long-running emulator sees sessions end and new ones begin).
   */
  now?: number;
  /** Which sessions a window returns; default 'closed'. See docs/emulator.md. */
  windowRule?: WindowRule;
  /** How the SDL declares sessions(start, end); default 'Int!'. See docs/emulator.md. */
  argTypes?: ArgTypes;
  faults?: EmulatorFaults;
  /**
   * Keep rendered `sessions` bodies by query text, so a repeated query costs only the write
   * (benchmarks). `true` keeps up to 1 GiB (a million full records take about 560 MB); an object sets the limit. Default false.
   */
  cacheBodies?: boolean | { maxBytes: number };
  /** Receives one line per request. The API key is never part of it. */
  log?: (line: string) => void;
  /** Passed untouched to the interface handler as `ctx.options`. */
  interface?: unknown;
}

export interface EmulatorStats {
  /** Every HTTP request received, including those answered by the interface handler. */
  requests: number;
  /** Answers by HTTP status ("200", "401", ...); resets are not answers and are not counted here. */
  byStatus: Record<string, number>;
  /** Injected faults by kind: serverError, reset, truncate, partial, rateLimited, maxResults, maxSpan, truncatedResults. */
  faults: Record<string, number>;
  inFlight: number;
  maxInFlight: number;
  /** Session records in answers that were sent complete (truncated bodies are not counted). */
  recordsServed: number;
  /** With `accounts` only: the same figures per account name. */
  accounts?: Record<string, EmulatorAccountStats>;
}

export interface EmulatorDataset {
  /** Every session whose started lies in [start, end) as the server would return it at the current "now" (sorted by started, then id). */
  sessionsStartedIn(start: number, end: number): SessionRecord[];
  /** The session with this id, or undefined. */
  byId(id: string): SessionRecord | undefined;
}

export interface Emulator {
  /** e.g. http://127.0.0.1:PORT/ */
  url: string;
  /** The key accepted; with `accounts`, the first account's. */
  apiKey: string;
  /** With `accounts`: each account, in the order given; otherwise empty. */
  accounts: readonly EmulatorAccountView[];
  /** The account of this name; throws a RangeError when there is none. */
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
