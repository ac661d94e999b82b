import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { buildOverview } from '../../src/dashboard/overview.js';
import type { StateReading } from '../../src/dashboard/state-reader.js';
import type { StateSnapshot } from '../../src/store/state-snapshot.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const H = 3600_000;

function run(outcome: string, startedAt: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { run_id: `run-${startedAt}`, kind: 'export', outcome, started_at: startedAt, ended_at: outcome === 'running' ? null : startedAt, sessions_written: 5, error: null, ...extra };
}

function snapshot(s: Partial<StateSnapshot>): StateSnapshot {
  return {
    version: 1,
    writtenAt: '2026-03-10T11:00:00.000Z',
    format: 'both',
    checkpoint: '2026-03-10T02:00:00Z',
    coverage: [{ from: '2026-03-01T00:00:00Z', to: '2026-03-10T02:00:00Z' }],
    coverageHoles: [],
    rows: 1234,
    pendingPartitions: [],
    pendingRows: 0,
    rejected: 0,
    lastRuns: [run('succeeded', '2026-03-10T02:00:00.000Z')],
    running: null,
    ...s,
  };
}

const reading = (snap: StateSnapshot | null, liveHolder: StateReading['liveHolder'] = null): StateReading => ({ snapshot: snap, liveHolder, deadHolder: null, source: 'snapshot', deadRunSnapshot: null });
const overview = (r: StateReading) => buildOverview({ reading: r, parquetRows: 999, nowMs: NOW, maxLagSeconds: 26 * 3600, nextRun: null });

describe('buildOverview: health', () => {
  it.each([
    ['a recent checkpoint, last run succeeded, no holes', snapshot({}), 'healthy', []],
    ['the checkpoint more than maxLag behind', snapshot({ checkpoint: '2026-03-08T02:00:00Z' }), 'lagging', [/checkpoint 2026-03-08T02:00:00Z is 2 d 10 h behind now, more than the allowed 26 h 00 min \(--max-lag\)/]],
    ['a coverage hole', snapshot({ coverageHoles: [{ from: '2026-03-03T00:00:00Z', to: '2026-03-04T00:00:00Z' }] }), 'lagging', [/1 coverage hole\(s\): the calendar shows each one/]],
    ['the last run failed', snapshot({ lastRuns: [run('failed', '2026-03-10T02:00:00.000Z', { error: 'HTTP 503' }), run('succeeded', '2026-03-09T02:00:00.000Z')] }), 'failing', [/failed: HTTP 503/]],
    ['no snapshot yet', null, 'failing', [/nothing exported yet/]],
  ])('%s: %s', (_what, snap, state, reasons) => {
    const o = overview(reading(snap));
    expect(o.health.state).toBe(state);
    expect(o.health.reasons).toHaveLength(reasons.length);
    reasons.forEach((r, i) => expect(o.health.reasons[i]).toMatch(r));
  });

  it('a run marked running whose process is gone died: failing, and shown as died', () => {
    const snap = snapshot({
      lastRuns: [run('running', '2026-03-10T10:00:00.000Z'), run('succeeded', '2026-03-10T02:00:00.000Z')],
      running: { runId: 'run-2026-03-10T10:00:00.000Z', pid: 1, host: hostname(), startedAt: '2026-03-10T10:00:00.000Z', command: 'export' },
    });
    const o = overview(reading(snap, null));
    expect(o.running).toBeNull();
    expect(o.runs[0]!.outcome).toBe('died');
    expect(o.health.state).toBe('failing');
  });

  it('a live run: its progress and an ETA from its pace; the last finished run decides the health', () => {
    const runId = 'run-2026-03-10T11:00:00.000Z';
    const snap = snapshot({
      lastRuns: [run('running', '2026-03-10T11:00:00.000Z'), run('succeeded', '2026-03-10T02:00:00.000Z')],
      running: {
        runId,
        pid: process.pid,
        host: hostname(),
        startedAt: '2026-03-10T11:00:00.000Z',
        command: `backfill (run ${runId})`,
        progress: { windowsTotal: 40, windowsDone: 10, sessions: 500, at: '2026-03-10T11:50:00.000Z' },
      },
    });
    const o = overview(reading(snap, { pid: process.pid, host: hostname(), startedAt: '2026-03-10T11:00:00.000Z', command: `backfill (run ${runId})`, runId }));
    expect(o.running).toMatchObject({ runId, windowsDone: 10, windowsTotal: 40, sessions: 500 });
    // 10 windows in 50 minutes: 30 more take 150 minutes after the progress was reported.
    expect(o.running!.eta).toBe('2026-03-10T14:20:00.000Z');
    expect(o.runs[0]!.outcome).toBe('running');
    expect(o.health.state).toBe('healthy');
    expect(o.health.summary).toMatch(/a run is going/);
    expect(NOW - Date.parse(o.checkpoint!)).toBe(10 * H);
  });

  it('stored sessions: the table rows, else the Parquet dataset rows (format parquet)', () => {
    expect(overview(reading(snapshot({}))).totalSessions).toBe(1234);
    expect(overview(reading(snapshot({ rows: null, format: 'parquet' }))).totalSessions).toBe(999);
  });
});

describe('buildOverview: when read, and partitions waiting for their rewrite', () => {
  it('says when the figures were read (now) beside when the state was written', () => {
    const o = overview(reading(snapshot({})));
    expect(o.readAt).toBe(new Date(NOW).toISOString());
    expect(o.asOf).toBe('2026-03-10T11:00:00.000Z');
  });

  it('partitions waiting: the dataset\'s count beside the table\'s, and the days; none waiting: no second count', () => {
    const waiting = snapshot({ rows: 5196, pendingPartitions: ['2026-03-09', '2026-03-10'] });
    const o = buildOverview({ reading: reading(waiting), parquetRows: null, datasetRows: 5194, nowMs: NOW, maxLagSeconds: 26 * 3600, nextRun: null });
    expect(o).toMatchObject({ totalSessions: 5196, datasetSessions: 5194, pendingPartitions: ['2026-03-09', '2026-03-10'] });
    const none = buildOverview({ reading: reading(snapshot({ rows: 5196 })), parquetRows: null, datasetRows: 5196, nowMs: NOW, maxLagSeconds: 26 * 3600, nextRun: null });
    expect(none).toMatchObject({ totalSessions: 5196, datasetSessions: null, pendingPartitions: [] });
  });
});
