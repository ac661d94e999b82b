import { describe, expect, it } from 'vitest';
import { checkHealth, DEFAULT_MAX_LAG_SECONDS } from '../../src/monitoring/health.js';
import { EMPTY_STATE, type MonitoredRun, type MonitoredState } from '../../src/monitoring/read-state.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const H = 3600;
const at = (iso: string) => Date.parse(iso) / 1000;
const run = (outcome: string, error: string | null = null): MonitoredRun => ({
  runId: `export-${outcome}`,
  kind: 'export',
  outcome,
  startedAt: at('2026-03-10T02:00:00Z'),
  endedAt: outcome === 'died' ? null : at('2026-03-10T02:05:00Z'),
  error,
});
const healthyState: MonitoredState = {
  checkpoint: at('2026-03-10T01:50:00Z'),
  coverageHoles: 0,
  storedSessions: 1000,
  lastRun: run('succeeded'),
  lastSuccessAt: at('2026-03-10T02:05:00Z'),
};

describe('checkHealth (the verdict of /healthz and status --check)', () => {
  it.each<[string, MonitoredState, number, RegExp[]]>([
    ['a fresh checkpoint after a succeeded run', healthyState, DEFAULT_MAX_LAG_SECONDS, []],
    ['nothing-to-do and interrupted runs are not failures', { ...healthyState, lastRun: run('interrupted') }, DEFAULT_MAX_LAG_SECONDS, []],
    ['a failed last run, with its error', { ...healthyState, lastRun: run('failed', 'HTTP 401: check REPORTING_API_KEY') }, DEFAULT_MAX_LAG_SECONDS, [/last run export-failed \(export\) failed: HTTP 401/]],
    ['a run whose process died', { ...healthyState, lastRun: run('died') }, DEFAULT_MAX_LAG_SECONDS, [/started 2026-03-10T02:00:00Z, never finished/]],
    ['a checkpoint older than --max-lag', { ...healthyState, checkpoint: at('2026-03-09T01:00:00Z') }, DEFAULT_MAX_LAG_SECONDS, [/checkpoint 2026-03-09T01:00:00Z is 1d 11h behind now, more than the allowed 1d 2h \(--max-lag\)/]],
    ['the same checkpoint within a larger --max-lag', { ...healthyState, checkpoint: at('2026-03-09T01:00:00Z') }, 36 * H, []],
    ['a smaller --max-lag', healthyState, 10 * 60, [/10h 10m behind now, more than the allowed 10m \(--max-lag\)/]],
    ['coverage holes', { ...healthyState, coverageHoles: 2 }, DEFAULT_MAX_LAG_SECONDS, [/2 coverage hole\(s\)/]],
    ['an empty data directory', EMPTY_STATE, DEFAULT_MAX_LAG_SECONDS, [/nothing exported yet/]],
    [
      'every problem at once, one reason each',
      { ...healthyState, checkpoint: at('2026-03-01T00:00:00Z'), coverageHoles: 1, lastRun: run('failed', 'boom') },
      DEFAULT_MAX_LAG_SECONDS,
      [/failed: boom/, /behind now/, /1 coverage hole/],
    ],
  ])('%s', (_what, state, maxLagSeconds, expected) => {
    const h = checkHealth(state, { nowMs: NOW, maxLagSeconds });
    expect(h.healthy).toBe(expected.length === 0);
    expect(h.reasons).toHaveLength(expected.length);
    expected.forEach((re, i) => expect(h.reasons[i]).toMatch(re));
  });

  it('reports the checkpoint and its lag', () => {
    const h = checkHealth(healthyState, { nowMs: NOW, maxLagSeconds: DEFAULT_MAX_LAG_SECONDS });
    expect(h).toMatchObject({ checkpoint: '2026-03-10T01:50:00Z', lagSeconds: 10 * H + 600, lastRun: { outcome: 'succeeded', endedAt: '2026-03-10T02:05:00Z' } });
  });
});
