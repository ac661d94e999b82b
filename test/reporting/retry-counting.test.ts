/**
 * Every retry the client makes is counted once (issues 38 and 42): the "retrying a request" log
 * lines, the summary, the `_runs` row, the metrics textfile and the requests the emulator received
 * all say the same, when the run succeeds and when a window gives up (whose retries used to be
 * lost). Server errors and closed sockets from the emulator's fault knobs, over real HTTP; the
 * built CLI as a user runs it.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import type { EmulatorFaults } from '../../src/emulator/index.js';
import type { RunSummary } from '../../src/pipeline/run.js';
import { runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { value } from '../monitoring/helpers.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 10 * D;

const fx = useEmulator({ seed: 21, from: FROM - D, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-retry-count-' });

interface Counted {
  code: number | null;
  summary: RunSummary;
  /** The log's "retrying a request" lines. */
  retryLines: Array<{ kind: string; message: string }>;
  /** The requests the emulator received. */
  received: number;
  row: { requests: number; retries: number; rate_limited: number };
  metrics: string;
  stderr: string;
}

/** A backfill of 8 days in 16 windows, one at a time (the emulator's dice fall the same way every run), under `faults`. */
async function backfillUnder(faults: EmulatorFaults, maxAttempts: number): Promise<Counted> {
  const dataDir = await fx.tempDir();
  const file = join(dataDir, 'textfile', 'session_etl.prom');
  await mkdir(join(dataDir, 'textfile'), { recursive: true });
  // A day stored first, without faults: the store stays even if the run under test commits nothing
  // (a first run that commits nothing removes what it created), so its _runs row can be read.
  const seed = await runCli(['backfill', '--from', isoDay(FROM - D), '--to', isoDay(FROM), '--no-progress'], fx.env(join(dataDir, 'store')));
  expect(seed.code, seed.stderr).toBe(0);
  fx.emu.setFaults(faults);
  fx.emu.resetStats();
  const r = await runCli(
    ['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 8 * D), '--chunk', '12h', '--concurrency', '1', '--max-attempts', String(maxAttempts), '--json', '--no-progress', '--metrics-file', file],
    fx.env(join(dataDir, 'store')),
  );
  const received = fx.emu.stats().requests;
  fx.emu.setFaults({});
  const lines = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; kind: string; message: string });
  const summary = JSON.parse(r.stdout) as RunSummary;
  const inst = await DuckDBInstance.create(join(dataDir, 'store', 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
  const c = await inst.connect();
  const rows = (await c.runAndReadAll(`SELECT requests, retries, rate_limited FROM _runs WHERE run_id = '${summary.runId}'`)).getRowObjectsJS();
  c.closeSync();
  inst.closeSync();
  const row = Object.fromEntries(Object.entries(rows[0]!).map(([k, v]) => [k, Number(v)])) as Counted['row'];
  return { code: r.code, summary, retryLines: lines.filter((l) => l.msg === 'retrying a request'), received, row, metrics: await readFile(file, 'utf8'), stderr: r.stderr };
}

function expectOneCount(x: Counted): void {
  expect(x.retryLines.length).toBeGreaterThan(0);
  expect(x.summary.retries).toBe(x.retryLines.length);
  expect(x.summary.requests).toBe(x.received);
  expect(x.row).toEqual({ requests: x.summary.requests, retries: x.summary.retries, rate_limited: x.summary.rateLimited });
  const retried = value(x.metrics, 'session_etl_requests_total', { outcome: 'retried' }) + value(x.metrics, 'session_etl_requests_total', { outcome: 'rate_limited' });
  expect(retried).toBe(x.summary.retries);
  expect(value(x.metrics, 'session_etl_requests_total', { outcome: 'completed' }) + retried).toBe(x.summary.requests);
}

describe('retries are counted once, where they are logged', () => {
  it('server errors (HTTP 5xx at a rate of 0.3): every retry logged is in the summary, _runs and the metrics', async () => {
    const x = await backfillUnder({ serverErrorRate: 0.3 }, 5);
    // Whether a window gave up or not (the next two tests make sure one does), the counts agree.
    expect(x.code === 0 ? 'succeeded' : 'failed').toBe(x.summary.outcome);
    expect(x.retryLines.every((l) => l.kind === 'server-error')).toBe(true);
    expectOneCount(x);
  }, 120_000);

  it('server errors where a window gives up: its retries count too, and the error says how many attempts were made', async () => {
    const x = await backfillUnder({ serverErrorRate: 0.8 }, 2);
    expect(x.code).toBe(1);
    expectOneCount(x);
    expect(x.summary.outcome).toBe('failed');
    expect(x.summary.error).toMatch(/^window \S+ failed after 2 attempts: the reporting endpoint answered HTTP 50\d/);
    expect(x.stderr).toContain('failed after 2 attempts');
  });

  it('closed connections (the emulator destroys the socket) where a window gives up: counted like server errors', async () => {
    const x = await backfillUnder({ resetRate: 0.8 }, 2);
    expect(x.code).toBe(1);
    expectOneCount(x);
    expect(x.retryLines.every((l) => l.kind === 'network')).toBe(true);
    expect(x.summary.error).toMatch(/failed after 2 attempts: connection to the reporting endpoint \S+ failed/);
  });

  it('429s: each is counted once, as rate-limited and as a retry', async () => {
    const x = await backfillUnder({ faultRate: 0.3, faultKinds: ['rateLimited'] }, 5);
    expect(x.code).toBe(0);
    expect(x.summary.rateLimited).toBeGreaterThan(0);
    expect(x.summary.rateLimited).toBe(x.retryLines.filter((l) => l.kind === 'rate-limited').length);
    expect(x.summary.rateLimited).toBe(x.stderr.split('\n').filter((l) => l.includes('"msg":"rate limited (429): pausing all workers"')).length);
    expect(value(x.metrics, 'session_etl_rate_limited_total')).toBe(x.summary.rateLimited);
    expectOneCount(x);
  }, 120_000);
});
