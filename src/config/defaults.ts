/**
 * The default of every configuration key: the one place they are stated. loadConfig starts from
 * them, the configuration table of docs/configuration.md and `session-etl config` show them, and the library's
 * DEFAULTS (pipeline/options.ts) are derived from them, so a run from the command line and one from
 * the library behave the same when nothing is set.
 */
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_RETRY, DEFAULT_TIMEOUT_MS } from '../reporting/defaults.js';
import type { Config } from './schema.js';

export const CONFIG_DEFAULTS = {
  reportingUrl: null,
  dataDir: './data',
  parquetUrl: null,
  s3PathStyle: false,
  format: 'both',
  chunk: '1d',
  concurrency: 4,
  maxResultsPerQuery: null,
  minChunk: '1m',
  settle: '10m',
  lookback: '24h',
  onInvalid: 'fail',
  maxRequestsPerSecond: null,
  requestTimeout: `${DEFAULT_TIMEOUT_MS / 1000}s`,
  maxAttempts: DEFAULT_RETRY.maxAttempts,
  maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
  memoryLimit: null,
  startDate: null,
  logLevel: 'info',
  notifyUrl: null,
  maxLag: '26h',
  scheduleCron: '0 2 * * *',
  scheduleTimezone: 'UTC',
  volumeAnomalyThreshold: 0.5,
  volumeAnomalyWeeks: 4,
  volumeAnomalyMinSessions: 20,
  verifyCron: null,
  verifyRange: '30d',
  verifySample: 7,
  verifyRepair: false,
} as const satisfies Partial<Config>;
