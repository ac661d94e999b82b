/**
 * The default of every configuration key, stated once: loadConfig, docs/configuration.md's table, `config` and the
 * library's DEFAULTS (pipeline/options.ts) all read them, so the CLI and the library behave the same.
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
