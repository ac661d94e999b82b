/**
 * session-etl's public library API: the one public door. Internals (the store's SQL, the
 * emulator's generator, the CLI) are deliberately not exported.
 */
// Verifying a range against the source, and the volume-anomaly rule: docs/data-quality.md.
export { runBackfill, runExport, runVerify, newRunId, DEFAULTS, FirstRunNeedsSinceError, VerifyDifferencesError } from './pipeline/run.js';
export type { PipelineOptions, BackfillOptions, ExportOptions, RunSummary, Progress } from './pipeline/run.js';
export type { VerifyOptions, VerifyReport, VerifySummary } from './pipeline/run.js';
export { findVolumeAnomalies, DEFAULT_VOLUME_RULE, type VolumeAnomaly, type VolumeRule } from './store/volume-anomalies.js';
// Every error carries its exit code (`exitCode`); exitCodeOf reads it (1 when an error names none).
export { ExitCode, exitCodeOf } from './errors.js';
export { RunFailedError, RunInterruptedError, WindowFailedError } from './pipeline/errors.js';
export { cutWindows, parseInstant, parseDuration, InstantParseError, type Window } from './time/windows.js';
export { ReportingClient, DEFAULT_RETRY } from './reporting/client.js';
export type { ReportingClientOptions, RetryOptions, AttemptHooks, FetchResult } from './reporting/client.js';
export * from './reporting/errors/index.js';
export type { SessionRecord } from './schema/session-fields.js';
export { SESSION_COLUMNS } from './store/contract.js';
export type { OutputFormat } from './store/layout.js';
export { DataDirError, StoreBusyError, StoreWriteError, StoreSettingError } from './store/errors.js';
export { LockHeldError } from './store/lock.js';
export { readStateSnapshot, StateSnapshotSchema, type StateSnapshot } from './store/state-snapshot.js';
export { loadConfig } from './config/load.js';
export { ConfigError, isConfigError } from './config/errors.js';
export { ConfigSchema, type Config } from './config/schema.js';
export { startEmulator, DEFAULT_EMULATOR_API_KEY } from './emulator/index.js';
export type { Emulator, EmulatorOptions, EmulatorFaults } from './emulator/index.js';
// The rest of the interface: token service, session control, identity (docs/interface.md).
export * from './auth/index.js';
export * from './control/index.js';
export * from './identity/index.js';
// The vendor's list conventions (paging, sorting, filtering) over sessions: docs/list-conventions.md.
export * from './list/index.js';
// Monitoring: Prometheus metrics (a registry per call) and the health verdict (docs/monitoring.md).
export { createMetrics, type SessionEtlMetrics, type MetricsOptions, type RunRecord } from './monitoring/metrics.js';
export { checkHealth, DEFAULT_MAX_LAG_SECONDS, type Health, type HealthOptions } from './monitoring/health.js';
export { readMonitoredState, type MonitoredState, type MonitoredRun } from './monitoring/read-state.js';
