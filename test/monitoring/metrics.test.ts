import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/monitoring/metrics.js';
import type { MonitoredState } from '../../src/monitoring/read-state.js';
import type { RunSummary } from '../../src/pipeline/run.js';
import { checkExposition, value } from './helpers.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const at = (iso: string) => Date.parse(iso) / 1000;
const stored: MonitoredState = {
  checkpoint: at('2026-03-10T01:50:00Z'),
  coverageHoles: 1,
  storedSessions: 1234,
  lastRun: { runId: 'export-1', kind: 'export', outcome: 'succeeded', startedAt: at('2026-03-10T02:00:00Z'), endedAt: at('2026-03-10T02:05:00Z'), error: null },
  lastSuccessAt: at('2026-03-10T02:05:00Z'),
};

function summary(over: Partial<RunSummary> = {}): RunSummary {
  return {
    runId: 'export-2',
    kind: 'export',
    outcome: 'succeeded',
    range: { from: '2026-03-09T01:50:00Z', to: '2026-03-10T11:50:00Z' },
    resumed: false,
    windows: { total: 2, done: 2, skipped: 0 },
    sessions: { written: 250, new: 200, updated: 50, rejected: 0, duplicatesDropped: 0 },
    requests: 10,
    retries: 4,
    rateLimited: 3,
    pausedMs: 7500,
    bisections: 0,
    durationMs: 42_000,
    checkpoint: '2026-03-10T11:50:00Z',
    coverageHoles: [],
    files: { dataDir: '/d', duckdb: null, parquet: null, partitionsWritten: [] },
    ...over,
  };
}

describe('the metrics registry', () => {
  it('gauges come from the stored state; the lag is computed at scrape time', async () => {
    let now = NOW;
    const m = createMetrics({ now: () => now });
    m.setState(stored);
    let text = await m.metrics();
    expect(value(text, 'session_etl_checkpoint_timestamp_seconds')).toBe(at('2026-03-10T01:50:00Z'));
    expect(value(text, 'session_etl_checkpoint_lag_seconds')).toBe(10 * 3600 + 600);
    expect(value(text, 'session_etl_coverage_holes')).toBe(1);
    expect(value(text, 'session_etl_stored_sessions')).toBe(1234);
    expect(value(text, 'session_etl_last_run_timestamp_seconds')).toBe(at('2026-03-10T02:05:00Z'));
    expect(value(text, 'session_etl_last_success_timestamp_seconds')).toBe(at('2026-03-10T02:05:00Z'));
    expect(value(text, 'session_etl_last_run_failed')).toBe(0);
    now += 3600_000;
    text = await m.metrics();
    expect(value(text, 'session_etl_checkpoint_lag_seconds')).toBe(11 * 3600 + 600);
  });

  it('counts runs from their summaries, and a run that failed before it had one', async () => {
    const m = createMetrics({ now: () => NOW, commands: ['export'] });
    m.setState(stored);
    m.recordRun({ command: 'export', summary: summary(), durationMs: 42_000 });
    m.recordRun({ command: 'export', summary: summary({ outcome: 'failed', sessions: { ...summary().sessions, written: 5 }, error: 'window … failed', durationMs: 1000 }), durationMs: 1000 });
    m.recordRun({ command: 'export', error: new Error('lock held by pid 7'), durationMs: 300 });
    const text = await m.metrics();
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'succeeded' })).toBe(1);
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'failed' })).toBe(2);
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'interrupted' })).toBe(0);
    expect(value(text, 'session_etl_sessions_written_total')).toBe(255);
    expect(value(text, 'session_etl_requests_total', { outcome: 'completed' })).toBe(12);
    expect(value(text, 'session_etl_requests_total', { outcome: 'retried' })).toBe(2);
    expect(value(text, 'session_etl_requests_total', { outcome: 'rate_limited' })).toBe(6);
    expect(value(text, 'session_etl_rate_limited_total')).toBe(6);
    expect(value(text, 'session_etl_paused_seconds_total')).toBe(15);
    expect(value(text, 'session_etl_run_duration_seconds_count', { command: 'export' })).toBe(3);
    expect(value(text, 'session_etl_run_duration_seconds_sum', { command: 'export' })).toBeCloseTo(43.3);
    expect(value(text, 'session_etl_run_duration_seconds_bucket', { command: 'export', le: '30' })).toBe(2);
    // The last run failed: the state-derived gauges follow the summaries until the store is read again.
    expect(value(text, 'session_etl_last_run_failed')).toBe(1);
    expect(value(text, 'session_etl_checkpoint_timestamp_seconds')).toBe(at('2026-03-10T11:50:00Z'));
    expect(value(text, 'session_etl_last_success_timestamp_seconds')).toBe(NOW / 1000);
    expect(m.state.lastRun?.error).toBe('lock held by pid 7');
  });

  it('an empty data directory gives NaN, not a zero that looks like 1970', async () => {
    const text = await createMetrics().metrics();
    for (const name of ['session_etl_checkpoint_timestamp_seconds', 'session_etl_checkpoint_lag_seconds', 'session_etl_last_success_timestamp_seconds']) {
      expect(value(text, name)).toBeNaN();
    }
  });

  it('a run the store never logged stays the last run when the store is read back', async () => {
    const m = createMetrics({ now: () => NOW });
    m.recordRun({ command: 'export', error: new Error('the data directory is locked'), durationMs: 10 });
    m.refreshState(stored);
    expect(m.state.lastRun?.outcome).toBe('failed');
    expect(m.state.storedSessions).toBe(1234);
    m.recordRun({ command: 'export', summary: summary({ runId: 'export-3' }), durationMs: 10 });
    const logged = { ...stored, lastRun: { ...stored.lastRun!, runId: 'export-3', startedAt: NOW / 1000 - 5 } };
    m.refreshState(logged);
    expect(m.state.lastRun?.runId).toBe('export-3');
  });

  it('each registry is its own: two do not share counters', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.recordRun({ command: 'export', summary: summary(), durationMs: 1 });
    expect(value(await a.metrics(), 'session_etl_sessions_written_total')).toBe(250);
    expect(value(await b.metrics(), 'session_etl_sessions_written_total')).toBe(0);
  });

  it('the exposition passes promtool check metrics, process metrics included', async () => {
    const m = createMetrics({ processMetrics: true, commands: ['export', 'backfill'] });
    m.setState(stored);
    m.recordRun({ command: 'export', summary: summary(), durationMs: 1 });
    const text = await m.metrics();
    expect(value(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(value(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    const r = checkExposition(text);
    expect(r.problems).toEqual([]);
    expect([0, 3]).toContain(r.code); // 3: lint findings, all on prom-client's nodejs_active_* (filtered above)
    const plain = checkExposition(await createMetrics({ commands: ['export'] }).metrics());
    expect(plain).toEqual({ code: 0, problems: [] });
  });
});
