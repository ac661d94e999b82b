/**
 * `session-etl schedule --http-port`: /metrics and /healthz of a real scheduler process running a
 * real export against the emulator, checked by Prometheus' own tools and scraped by a real
 * Prometheus server.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStateSnapshot } from '../../src/store/state-snapshot.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { checkExposition, startPrometheus, value } from './helpers.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;
const TO = FROM + 3 * D;
const SETTLE = 600;

const fx = useEmulator({ seed: 11, from: FROM, to: TO, now: NOW, sessionsPerDay: 60 }, { prefix: 'session-etl-schedule-' });
let dir: string;
let dataDir: string;
let config: string;
const children: Array<ReturnType<typeof startCli>> = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'session-etl-monitoring-'));
  dataDir = join(dir, 'data');
  config = join(dir, 'config.json');
  await writeFile(config, JSON.stringify({ startDate: isoDay(FROM) }));
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

function env(extra: Record<string, string> = {}) {
  return { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dataDir, ...extra };
}

/** Starts the scheduler (its cron never fires during a test) and returns it with its endpoint's base URL. */
async function schedule(args: string[], extraEnv: Record<string, string> = {}) {
  const s = startCli(['schedule', '--cron', '0 0 1 1 *', '--http-port', '0', '--config', config, '--log-level', 'info', ...args], env(extraEnv));
  children.push(s);
  let base = '';
  await waitFor(() => {
    const m = /^Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(s.output().split('\n').find((l) => l.startsWith('Metrics:')) ?? '');
    if (m) base = m[1]!;
    return Boolean(m) || s.exitCode !== null;
  }, 30_000, 'the metrics URL');
  expect(base, s.output()).not.toBe('');
  return { s, base };
}

const scrape = async (base: string) => {
  const r = await fetch(`${base}/metrics`);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
};
const healthz = async (base: string) => {
  const r = await fetch(`${base}/healthz`);
  return { status: r.status, body: (await r.json()) as { healthy: boolean; reasons: string[]; running: boolean } };
};

describe('schedule --http-port (real processes, emulator, Prometheus)', () => {
  let written = 0;
  let checkpoint = 0;

  it('serves /metrics and /healthz during and after a run; a real Prometheus scrapes it', async () => {
    fx.emu.setFaults({ latencyMs: 300 });
    const { s, base } = await schedule(['--run-now', '--concurrency', '1']);
    expect(s.output().split('\n')[0]).toMatch(/^Metrics: http:\/\/127\.0\.0\.1:\d+\/metrics/);

    // During the run: in progress, nothing counted yet, nothing stored yet so /healthz is 503.
    let during = '';
    await waitFor(async () => value((during = await scrape(base)), 'session_etl_run_in_progress') === 1, 30_000, 'a scrape during the run');
    expect(value(during, 'session_etl_runs_total', { command: 'export', outcome: 'succeeded' })).toBe(0);
    expect(value(during, 'session_etl_checkpoint_timestamp_seconds')).toBeNaN();
    const hDuring = await healthz(base);
    expect(hDuring.status).toBe(503);
    expect(hDuring.body).toMatchObject({ healthy: false, running: true });
    expect(hDuring.body.reasons).toEqual([expect.stringMatching(/nothing exported yet/)]);

    // After it: the counters and the gauges agree with what the emulator served and what is stored.
    let after = '';
    await waitFor(async () => value((after = await scrape(base)), 'session_etl_runs_total', { command: 'export', outcome: 'succeeded' }) === 1, 60_000, 'the run to end');
    fx.emu.setFaults({});
    const served = fx.emu.dataset.sessionsStartedIn(FROM, TO).length;
    expect(served).toBeGreaterThan(100);
    written = value(after, 'session_etl_sessions_written_total');
    expect(written).toBe(served);
    expect(value(after, 'session_etl_stored_sessions')).toBe(served);
    expect(value(after, 'session_etl_run_in_progress')).toBe(0);
    expect(value(after, 'session_etl_coverage_holes')).toBe(0);
    expect(value(after, 'session_etl_last_run_failed')).toBe(0);
    expect(value(after, 'session_etl_requests_total', { outcome: 'completed' })).toBeGreaterThanOrEqual(4);
    expect(value(after, 'session_etl_run_duration_seconds_count', { command: 'export' })).toBe(1);
    const lag = value(after, 'session_etl_checkpoint_lag_seconds');
    expect(lag).toBeGreaterThanOrEqual(SETTLE);
    expect(lag).toBeLessThan(SETTLE + 120);
    checkpoint = value(after, 'session_etl_checkpoint_timestamp_seconds');
    expect(value(after, 'session_etl_last_success_timestamp_seconds')).toBeGreaterThan(checkpoint);
    expect(value(after, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    const check = checkExposition(after);
    expect(check.problems).toEqual([]);
    expect([0, 3]).toContain(check.code);
    const h = await healthz(base);
    expect(h).toMatchObject({ status: 200, body: { healthy: true, reasons: [], running: false } });
    expect(await readDuckDbSessions(dataDir)).toHaveLength(served);
    expect((await fetch(`${base}/nope`)).status).toBe(404);

    // A real Prometheus server scrapes the endpoint; its query API returns our counter.
    const prom = await startPrometheus(base.replace('http://', ''), dir);
    try {
      let result: Array<{ metric: Record<string, string>; value: [number, string] }> = [];
      await waitFor(async () => {
        try {
          const r = await fetch(`${prom.url}/api/v1/query?query=session_etl_sessions_written_total`);
          if (!r.ok) return false;
          result = ((await r.json()) as { data: { result: typeof result } }).data.result;
          return result.length > 0;
        } catch {
          return false;
        }
      }, 60_000, `Prometheus to scrape the scheduler (${(prom.process as unknown as { log(): string }).log()})`);
      expect(result).toHaveLength(1);
      expect(result[0]!.metric).toMatchObject({ job: 'session-etl', instance: base.replace('http://', '') });
      expect(Number(result[0]!.value[1])).toBe(served);
    } finally {
      await prom.stop();
    }

    s.kill('SIGTERM');
    expect((await s.result).code).toBe(0);
  });

  it('after a restart the gauges come from the stored state; counters start again at zero', async () => {
    expect(written).toBeGreaterThan(0);
    const { s, base } = await schedule([]);
    const text = await scrape(base);
    expect(value(text, 'session_etl_checkpoint_timestamp_seconds')).toBe(checkpoint);
    expect(value(text, 'session_etl_stored_sessions')).toBe(written);
    expect(value(text, 'session_etl_last_success_timestamp_seconds')).toBeGreaterThan(checkpoint);
    expect(value(text, 'session_etl_last_run_timestamp_seconds')).toBe(value(text, 'session_etl_last_success_timestamp_seconds'));
    expect(value(text, 'session_etl_sessions_written_total')).toBe(0);
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'succeeded' })).toBe(0);
    expect((await healthz(base)).status).toBe(200);
    s.kill('SIGINT');
    expect((await s.result).code).toBe(0);
  });

  it('a SIGINT the moment the metrics URL is printed is a clean stop (exit 0), not the signal\'s default kill', async () => {
    const s = startCli(['schedule', '--cron', '0 0 1 1 *', '--http-port', '0', '--config', config], env());
    children.push(s);
    s.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('Metrics: ')) s.kill('SIGINT');
    });
    const r = await s.result;
    expect(r.stdout).toContain('Metrics: ');
    expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
  });

  it('/healthz and status --check turn unhealthy when a run fails or the checkpoint lags beyond --max-lag', async () => {
    const { s, base } = await schedule(['--run-now', '--max-lag', '5m'], { REPORTING_API_KEY: 'wrong-key-0123456789' });
    let text = '';
    await waitFor(async () => value((text = await scrape(base)), 'session_etl_runs_total', { command: 'export', outcome: 'failed' }) === 1, 60_000, 'the failed run');
    expect(value(text, 'session_etl_last_run_failed')).toBe(1);
    expect(value(text, 'session_etl_last_run_timestamp_seconds')).toBeGreaterThan(value(text, 'session_etl_last_success_timestamp_seconds'));
    const h = await healthz(base);
    expect(h.status).toBe(503);
    expect(h.body.reasons).toEqual([expect.stringMatching(/^last run export-\S+ \(export\) failed: .*HTTP 401/), expect.stringMatching(/behind now, more than the allowed 5m \(--max-lag\)/)]);
    expect(JSON.stringify(h.body) + text).not.toContain('wrong-key-0123456789');
    s.kill('SIGTERM');
    expect((await s.result).code).toBe(0);

    const check = await runCli(['status', '--check'], env());
    expect(check.code).toBe(1);
    expect(check.stdout.trim().split('\n')).toEqual([expect.stringMatching(/^UNHEALTHY: last run export-\S+ \(export\) failed: .*HTTP 401/)]);
    const lagging = await runCli(['status', '--check', '--max-lag', '5m'], env());
    expect(lagging.code).toBe(1);
    expect(lagging.stdout.trim().split('\n')).toHaveLength(2);

    // The next run succeeds: healthy again, for both.
    const ok = await runCli(['export', '--no-progress', '--config', config], env());
    expect(ok.code).toBe(0);
    const healthy = await runCli(['status', '--check'], env());
    expect(healthy.code).toBe(0);
    expect(healthy.stdout).toMatch(/^OK: checkpoint \S+ \(1[0-9]m( \d+s)? behind now\), last run succeeded\n$/);
  });

  it('a clean stop (SIGTERM) while a run is going exits 0, not 143: the run commits its windows and is recorded as interrupted', async () => {
    const own = join(dir, 'stopped-mid-run');
    fx.emu.setFaults({ latencyMs: 700 });
    const { s, base } = await schedule(['--run-now', '--concurrency', '1'], { SESSION_ETL_DATA_DIR: own });
    try {
      // Stopped once a window has committed (stopped before the first one, a first run leaves nothing).
      await waitFor(async () => ((await readStateSnapshot(own).catch(() => null))?.running?.progress?.windowsDone ?? 0) >= 1, 30_000, 'a window to commit');
      expect(value(await scrape(base), 'session_etl_run_in_progress')).toBe(1);
      s.kill('SIGTERM');
      const r = await s.result;
      expect(r.code, r.stderr).toBe(0);
      // Logged as interrupted (a warning saying what was committed and that the next run continues), never as a failure.
      const logs = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string; detail?: string });
      expect(logs.filter((l) => l.msg === 'job failed' || l.level >= 50)).toEqual([]);
      const stopped = logs.find((l) => l.msg === 'job interrupted');
      expect(stopped?.level).toBe(40);
      expect(stopped?.detail).toMatch(/^export \S+ stopped: \d+ windows not started; data up to \S+ is committed; the next run continues from there$/);
      // Its summary is printed, on stdout, as a finished run's is.
      expect(r.stdout).toMatch(/^export \S+: interrupted\n {2}range/m);
      expect(r.stdout).toMatch(/^ {2}windows {8}\d+ of \d+ done, \d+ not started$/m);
      expect(r.stdout).toMatch(/^ {2}checkpoint {5}\d{4}-/m);
    } finally {
      fx.emu.setFaults({});
    }
    const status = await runCli(['status', '--json'], env({ SESSION_ETL_DATA_DIR: own }));
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { lastRuns: Array<{ outcome: string }> }).lastRuns[0]!.outcome).toBe('interrupted');
  });

  it('on a data directory with nothing stored and no startDate, schedule refuses to start (exit 2) naming startDate', async () => {
    const fresh = join(dir, 'fresh');
    const child = startCli(['schedule', '--cron', '0 0 1 1 *', '--http-port', '0'], env({ SESSION_ETL_DATA_DIR: fresh }));
    children.push(child); // killed after the tests if it ran on
    const r = await Promise.race([child.result, new Promise<never>((_, no) => setTimeout(() => no(new Error(`schedule started: ${child.output()}`)), 20_000))]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`nothing has been exported to ${fresh} yet and no startDate is set, so the nightly export would fail every night: set startDate`);
    expect(r.stdout).not.toContain('Metrics:');
    expect(existsSync(fresh)).toBe(false);
  });

  it('bad monitoring flags exit 2 before anything runs', async () => {
    for (const [args, message] of [
      [['schedule', '--http-port', 'ninety'], /--http-port must be a port number/],
      [['schedule', '--http-port', '70000'], /--http-port must be a port number/],
      [['schedule', '--http-port', '0', '--max-lag', 'a day'], /--max-lag \(from command line\): got "a day"; expected a duration/],
      [['status', '--check', '--max-lag', '0h'], /--max-lag "0h" must be longer than zero/],
      [['status', '--max-lag', '2h'], /--max-lag goes with --check/],
    ] as const) {
      const r = await runCli([...args], env());
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (busy.address() as AddressInfo).port;
      const r = await runCli(['schedule', '--cron', '0 0 1 1 *', '--http-port', String(port), '--config', config], env());
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`cannot serve metrics on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\): the port is in use`));
    } finally {
      busy.close();
    }
  });
});
