/**
 * Run notifications: the decision table, the sender's retry timing and time budget (fake clock),
 * redaction, and end to end against a real HTTP receiver on port 0 with the emulator: failure,
 * recovery, lag crossing, scheduled runs, a receiver that is down or never answers.
 */
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeRun } from '../../src/cli/execute-run.js';
import { describeConfig, loadConfig } from '../../src/config/load.js';
import {
  buildPayload,
  decideNotifications,
  postNotification,
  receiverOf,
  registerNotifyUrlSecret,
  type NotifyPayload,
  type RunEnd,
} from '../../src/monitoring/notify.js';
import { EMPTY_NOTIFY_STATE, type NotifyState } from '../../src/monitoring/notify-state.js';
import { runExport, type RunSummary } from '../../src/pipeline/run.js';
import { registerSecret } from '../../src/util/redact.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { captureLogger, captureStream, fakeTime } from '../helpers/capture.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { D, isoDay } from '../helpers/time.js';

const H = 3_600;
const NOW = Math.floor(Date.now() / 1000);
/** The webhook's secret part, as in a Slack URL's path. */
const HOOK_TOKEN = 'T0NOTIFY/B0NOTIFY/xoxwebhooktoken4711';
const WRONG_KEY = 'wrong-reporting-key-8e1f';

// ---- pure parts ---------------------------------------------------------------------------------

function summary(over: Partial<RunSummary> = {}): RunSummary {
  return {
    runId: 'export-20260305T021500Z-abcdef',
    kind: 'export',
    outcome: 'succeeded',
    range: null,
    resumed: false,
    windows: { total: 1, done: 1, skipped: 0 },
    sessions: { written: 12, new: 10, updated: 2, rejected: 0, duplicatesDropped: 0 },
    requests: 1,
    retries: 0,
    rateLimited: 0,
    pausedMs: 0,
    pace: null,
    bisections: 0,
    durationMs: 1000,
    checkpoint: '2026-03-05T02:00:00Z',
    coverageHoles: [],
    files: { dataDir: '/data', duckdb: null, parquet: null, partitionsWritten: [] },
    ...over,
  };
}
const END_MS = Date.parse('2026-03-05T02:15:00Z'); // 15 min after the checkpoint above
function end(over: Partial<RunEnd> = {}): RunEnd {
  return { command: 'export', dataDir: '/data', startedMs: END_MS - 1000, endedMs: END_MS, exitCode: 0, summary: summary(), ...over };
}
const failing: NotifyState = { failing: { runId: 'r0', command: 'export', since: '2026-03-04T02:15:00Z' }, lagExceeded: null };
const lagSent: NotifyState = { failing: null, lagExceeded: { notifiedAt: '2026-03-04T02:15:00Z', lagSeconds: 100_000 } };
const behind = (hours: number) => summary({ checkpoint: new Date(END_MS - hours * H * 1000).toISOString().replace('.000', '') });

describe('which run ends notify', () => {
  it.each<[string, RunEnd, NotifyState, string[]]>([
    ['a failed run', end({ exitCode: 1, summary: summary({ outcome: 'failed', error: 'boom' }) }), EMPTY_NOTIFY_STATE, ['run_failed']],
    ['another failed run while failing', end({ exitCode: 1, summary: summary({ outcome: 'failed' }) }), failing, ['run_failed']],
    ['a run that could not start (lock held, no summary)', end({ exitCode: 3, summary: undefined, error: new Error('locked') }), EMPTY_NOTIFY_STATE, ['run_failed']],
    ['a success after a failure', end(), failing, ['run_recovered']],
    ['nothing to do after a failure', end({ summary: summary({ outcome: 'nothing-to-do' }) }), failing, ['run_recovered']],
    ['a success with nothing open', end(), EMPTY_NOTIFY_STATE, []],
    ['a run stopped by a signal while failing', end({ exitCode: 143, summary: summary({ outcome: 'interrupted' }) }), failing, []],
    ['an export 27h behind', end({ summary: behind(27) }), EMPTY_NOTIFY_STATE, ['lag_exceeded']],
    ['an export 27h behind, alert already sent', end({ summary: behind(27) }), lagSent, []],
    ['a failed export 27h behind', end({ exitCode: 1, summary: { ...behind(27), outcome: 'failed' } }), EMPTY_NOTIFY_STATE, ['run_failed', 'lag_exceeded']],
    ['a backfill of old history', end({ command: 'backfill', summary: { ...behind(24 * 90), kind: 'backfill' } }), EMPTY_NOTIFY_STATE, []],
  ])('%s', (_name, e, prev, events) => {
    expect(decideNotifications(e, prev, 26 * H).events).toEqual(events);
  });

  it('an export back under the limit re-arms the lag alert; a failure opens a streak once', () => {
    expect(decideNotifications(end({ summary: behind(2) }), lagSent, 26 * H).state.lagExceeded).toBeNull();
    expect(decideNotifications(end({ summary: behind(27) }), lagSent, 26 * H).state.lagExceeded).not.toBeNull();
    const again = decideNotifications(end({ exitCode: 1, summary: summary({ outcome: 'failed', runId: 'r9' }) }), failing, 26 * H);
    expect(again.state.failing?.runId).toBe('r0');
  });
});

describe('the payload', () => {
  it('carries the run and a readable text, and no secret in any form', () => {
    const key = 'rk_live_SECRETKEY+/=9931';
    registerSecret(key);
    const url = `https://hooks.slack.com/services/${HOOK_TOKEN}`;
    registerNotifyUrlSecret(url);
    const error = new Error(`HTTP 401 for Authorization: ${key} (${encodeURIComponent(key)}) posting to ${url}`);
    const p = buildPayload('run_failed', end({ exitCode: 1, summary: undefined, error }), { maxLagSeconds: 26 * H, host: 'etl-1' });
    const json = JSON.stringify(p);
    expect(json).not.toContain(key);
    expect(json).not.toContain(encodeURIComponent(key));
    expect(json).not.toContain('xoxwebhooktoken4711');
    expect(p.error).toContain('[REDACTED]');
    expect(p).toMatchObject({ event: 'run_failed', command: 'export', host: 'etl-1', dataDir: '/data', exitCode: 1, outcome: 'failed', lagSeconds: null });
    expect(p.text).toMatch(/^session-etl export FAILED on etl-1 \(data \/data\): HTTP 401/);
  });

  it("text and error escape Slack's control characters, so a server's error cannot ping a channel or make a link", () => {
    const error = new Error('HTTP 500: <!channel> see <https://evil.example|the docs> & retry');
    const p = buildPayload('run_failed', end({ exitCode: 1, summary: undefined, error }), { maxLagSeconds: 26 * H, host: 'etl-1' });
    expect(p.text).toContain('HTTP 500: &lt;!channel&gt; see &lt;https://evil.example|the docs&gt; &amp; retry');
    expect(p.text).not.toMatch(/[<>]/);
    expect(p.error).toContain('HTTP 500: &lt;!channel&gt; see &lt;https://evil.example|the docs&gt; &amp; retry');
  });

  it('lag and recovery texts name the lag, the limit and the checkpoint', () => {
    const lag = buildPayload('lag_exceeded', end({ summary: behind(27) }), { maxLagSeconds: 26 * H, host: 'h' });
    expect(lag).toMatchObject({ lagSeconds: 27 * H, maxLagSeconds: 26 * H, error: null, sessionsWritten: 12 });
    expect(lag.text).toContain('1d 3h behind, over the 1d 2h limit');
    const rec = buildPayload('run_recovered', end(), { maxLagSeconds: 26 * H, host: 'h', failingSince: '2026-03-04T02:15:00Z' });
    expect(rec.text).toContain('RECOVERED on h (data /data): succeeded after failing since 2026-03-04T02:15:00Z; 12 sessions written, checkpoint 2026-03-05T02:00:00Z, 15m behind');
  });

  it('logs and `config` show the receiver as scheme and host only', () => {
    expect(receiverOf('https://user:pw@hooks.example.com:8443/services/abc?token=zzz')).toBe('https://hooks.example.com:8443');
    const loaded = loadConfig({ env: { SESSION_ETL_NOTIFY_URL: `https://hooks.slack.com/services/${HOOK_TOKEN}` } });
    const row = describeConfig(loaded).find((r) => r.key === 'notifyUrl');
    expect(row).toEqual({ key: 'notifyUrl', value: 'https://hooks.slack.com/[REDACTED]', source: 'env' });
    expect(describeConfig(loaded).find((r) => r.key === 'maxLag')?.value).toBe('26h');
  });
});

describe('delivery: retries, backoff and the time budget (fake clock)', () => {
  const payload = buildPayload('run_failed', end({ exitCode: 1 }), { maxLagSeconds: 26 * H, host: 'h' });
  function fakeFetch(answers: Array<number | 'reset'>) {
    const calls: RequestInit[] = [];
    const fetch = async (_url: string | URL | Request, init?: RequestInit) => {
      calls.push(init!);
      const a = answers[Math.min(calls.length - 1, answers.length - 1)]!;
      if (a === 'reset') throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET', message: 'socket hang up' } });
      return new Response(a === 200 ? 'ok' : 'no', { status: a });
    };
    return { fetch, calls };
  }

  it.each<[string, Array<number | 'reset'>, boolean, number, number[]]>([
    ['delivered at once', [200], true, 1, []],
    ['503, then delivered', [503, 200], true, 2, [1000]],
    ['a reset, a 429, then delivered', ['reset', 429, 200], true, 3, [1000, 2000]],
    ['5xx every time: 3 attempts, 1 s then 2 s apart', [500], false, 3, [1000, 2000]],
    ['404 is not retried', [404], false, 1, []],
    ['a redirect is not followed and not retried', [302], false, 1, []],
  ])('%s', async (_name, answers, delivered, attempts, sleeps) => {
    const t = fakeTime();
    const f = fakeFetch(answers);
    const d = await postNotification('https://hooks.example.com/x', payload, { fetch: f.fetch, now: t.now, sleep: t.sleep });
    expect(d).toMatchObject({ delivered, attempts });
    expect(t.sleeps).toEqual(sleeps);
    expect(f.calls.every((c) => c.redirect === 'manual' && c.method === 'POST')).toBe(true);
    expect(JSON.parse(String(f.calls[0]!.body))).toEqual(payload);
    if (answers[0] === 302) expect(d.error).toMatch(/redirects are not followed/);
  });

  it('a receiver that never answers costs at most 15 s: 5 s + 1 s + 5 s + 2 s + what is left', async () => {
    const t = fakeTime();
    const timeouts: number[] = [];
    const d = await postNotification('https://hooks.example.com/x', payload, {
      now: t.now,
      sleep: t.sleep,
      timeoutSignal: (ms) => {
        timeouts.push(ms);
        return AbortSignal.abort(new Error('timeout'));
      },
      // Never answers: the attempt ends when its timeout fires (the fake clock moves by it).
      fetch: async (_u, init) => {
        t.advance(timeouts[timeouts.length - 1]!);
        throw (init!.signal as AbortSignal).reason;
      },
    });
    expect(d).toMatchObject({ delivered: false, attempts: 3, error: 'no answer within 2000 ms' });
    expect(timeouts).toEqual([5000, 5000, 2000]);
    expect(t.now() - fakeTime().now()).toBe(15_000);
  });

  it('a budget of its own (budgetMs) bounds a single post as it bounds a notification step: 5 s + 1 s + what is left of 7 s', async () => {
    const t = fakeTime();
    const timeouts: number[] = [];
    const d = await postNotification('https://hooks.example.com/x', payload, {
      now: t.now,
      sleep: t.sleep,
      budgetMs: 7_000,
      timeoutSignal: (ms) => {
        timeouts.push(ms);
        return AbortSignal.abort(new Error('timeout'));
      },
      fetch: async (_u, init) => {
        t.advance(timeouts[timeouts.length - 1]!);
        throw (init!.signal as AbortSignal).reason;
      },
    });
    expect(d).toMatchObject({ delivered: false, attempts: 2, error: 'no answer within 1000 ms' });
    expect(timeouts).toEqual([5000, 1000]);
    expect(t.now() - fakeTime().now()).toBe(7_000);
  });
});

// ---- end to end: real receiver, emulator, CLI -----------------------------------------------------

type Receiver = WebhookReceiver<NotifyPayload>;
const startReceiver = (answer = true) => startWebhookReceiver<NotifyPayload>(`services/${HOOK_TOKEN}`, { answer });

const fx = useEmulator({ seed: 16, from: NOW - 5 * D, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-notify-' });
let receiver: Receiver;
const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-notify-'));
  dirs.push(d);
  return d;
}

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function env(dataDir: string, extra: Record<string, string> = {}) {
  return { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dataDir, SESSION_ETL_NOTIFY_URL: receiver.url, ...extra };
}
/** Every form of every secret of these tests. */
const SECRETS = () => [fx.emu.apiKey, WRONG_KEY, HOOK_TOKEN, 'xoxwebhooktoken4711'].flatMap((s) => [s, encodeURIComponent(s), Buffer.from(s).toString('base64')]);
function expectNoSecret(text: string) {
  for (const s of SECRETS()) expect(text).not.toContain(s);
  expect(text.toLowerCase()).not.toContain('bearer');
}

describe('notifications end to end (CLI, emulator, real receiver)', () => {
  it('a failed export posts run_failed; the next success posts run_recovered; a second success posts nothing', async () => {
    const dataDir = await tempDir();
    const start = receiver.posts.length;
    const first = await runCli(['export', '--since', isoDay(NOW - 3 * D), '--no-progress'], env(dataDir, { SESSION_ETL_NOTIFY_URL: '' }));
    expect(first.code).toBe(0);

    const failed = await runCli(['export', '--no-progress'], env(dataDir, { REPORTING_API_KEY: WRONG_KEY }));
    expect(failed.code).toBe(1);
    expect(receiver.posts.length).toBe(start + 1);
    const f = receiver.posts[start]!;
    expect(f.path).toBe(`/services/${HOOK_TOKEN}`);
    expect(f.contentType).toBe('application/json');
    expect(f.json).toMatchObject({ event: 'run_failed', command: 'export', job: null, dataDir, outcome: 'failed', exitCode: 1, sessionsWritten: 0 });
    expect(f.json.runId).toMatch(/^export-\d{8}T\d{6}Z-[0-9a-f]{6}$/);
    expect(failed.stderr).toContain(f.json.runId!);
    expect(f.json.error).toMatch(/refused the API key \(HTTP 401\)/);
    expect(Date.parse(f.json.startedAt)).toBeLessThanOrEqual(Date.parse(f.json.endedAt));
    expect(f.json.checkpoint).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(f.json.lagSeconds).toBe(Math.round((Date.parse(f.json.endedAt) - Date.parse(f.json.checkpoint!)) / 1000));
    expect(f.json.text).toMatch(/^session-etl export FAILED on .+ \(data .+\): .*refused the API key/);
    expect(failed.stderr).toMatch(/"event":"run_failed".*"receiver":"http:\/\/127\.0\.0\.1:\d+".*notification sent/);

    const ok = await runCli(['export', '--no-progress'], env(dataDir));
    expect(ok.code).toBe(0);
    expect(receiver.posts.length).toBe(start + 2);
    const r = receiver.posts[start + 1]!.json;
    expect(r).toMatchObject({ event: 'run_recovered', command: 'export', dataDir, exitCode: 0, error: null });
    expect(['succeeded', 'nothing-to-do']).toContain(r.outcome);
    expect(r.runId).not.toBe(f.json.runId);
    expect(r.text).toContain(`after failing since ${f.json.endedAt}`);

    const quiet = await runCli(['export', '--no-progress'], env(dataDir));
    expect(quiet.code).toBe(0);
    expect(receiver.posts.length).toBe(start + 2);

    for (const p of receiver.posts.slice(start)) expectNoSecret(p.body);
    for (const out of [failed, ok, quiet]) expectNoSecret(out.stdout + out.stderr);
  });

  it('a failed backfill posts run_failed as backfill', async () => {
    const dataDir = await tempDir();
    const start = receiver.posts.length;
    const r = await runCli(['backfill', '--from', isoDay(NOW - 3 * D), '--to', isoDay(NOW - D), '--no-progress'], env(dataDir, { REPORTING_API_KEY: WRONG_KEY }));
    expect(r.code).toBe(1);
    expect(receiver.posts.slice(start).map((p) => p.json)).toMatchObject([{ event: 'run_failed', command: 'backfill', dataDir, exitCode: 1 }]);
    expect(receiver.posts[start]!.json.runId).toMatch(/^backfill-/);
  });

  it('the lag crossing --max-lag posts once, and again only after it was back under the limit', async () => {
    const dataDir = await tempDir();
    const start = receiver.posts.length;
    const events = () => receiver.posts.slice(start).map((p) => p.json.event);
    // --settle 3h keeps the checkpoint 3 h behind now: over a 1 h limit.
    const a = await runCli(['export', '--since', isoDay(NOW - 2 * D), '--settle', '3h', '--max-lag', '1h', '--no-progress'], env(dataDir));
    expect(a.code).toBe(0);
    expect(events()).toEqual(['lag_exceeded']);
    const lag = receiver.posts[start]!.json;
    expect(lag).toMatchObject({ command: 'export', outcome: 'succeeded', maxLagSeconds: 3600, error: null });
    expect(lag.lagSeconds).toBeGreaterThanOrEqual(3 * H);
    expect(lag.sessionsWritten).toBeGreaterThan(0);
    expect(lag.text).toMatch(/LAG .*: data is 3h( \d+s)? behind, over the 1h limit/);
    expect((await stat(join(dataDir, 'notify-state.json'))).mode & 0o777).toBe(0o640);

    expect((await runCli(['export', '--settle', '3h', '--max-lag', '1h', '--no-progress'], env(dataDir))).code).toBe(0);
    expect(events()).toEqual(['lag_exceeded']);
    // Caught up (10 min behind, under 1 h): nothing to say, and the alert is armed again.
    expect((await runCli(['export', '--max-lag', '1h', '--no-progress'], env(dataDir))).code).toBe(0);
    expect(events()).toEqual(['lag_exceeded']);
    expect((await runCli(['export', '--max-lag', '5m', '--no-progress'], env(dataDir))).code).toBe(0);
    expect(events()).toEqual(['lag_exceeded', 'lag_exceeded']);
    expect(receiver.posts[start + 1]!.json.maxLagSeconds).toBe(300);
  });

  it('a scheduled run that fails posts run_failed naming the job', async () => {
    const dataDir = await tempDir();
    await mkdir(dataDir, { recursive: true });
    const cfg = join(dataDir, 'config.json');
    await writeFile(cfg, JSON.stringify({ startDate: isoDay(NOW - 2 * D) }));
    const start = receiver.posts.length;
    const s = startCli(['schedule', '--run-now', '--config', cfg], env(dataDir, { REPORTING_API_KEY: WRONG_KEY }));
    await waitFor(() => /notification sent/.test(s.output()), 30_000, 'a notification');
    s.kill('SIGTERM');
    const r = await s.result;
    expect([0, 143]).toContain(r.code); // 143 when the signal came before the run had fully ended
    const p = receiver.posts[start]!;
    expect(p.json).toMatchObject({ event: 'run_failed', command: 'schedule', job: 'nightly-export', dataDir, exitCode: 1, outcome: 'failed' });
    expect(p.json.text).toMatch(/^session-etl schedule \(job nightly-export\) FAILED/);
    expectNoSecret(p.body);
    expectNoSecret(r.stdout + r.stderr);
  });

  it('a receiver that is down: the run ends with its own exit code and the failure is logged without the URL', async () => {
    const down = await startReceiver();
    await down.close(); // connection refused from now on
    const dataDir = await tempDir();
    const run = await runCli(['export', '--since', isoDay(NOW - 2 * D), '--no-progress'], env(dataDir, { REPORTING_API_KEY: WRONG_KEY, SESSION_ETL_NOTIFY_URL: down.url }));
    expect(run.code).toBe(1);
    const port = new URL(down.url).port;
    expect(run.stderr).toMatch(new RegExp(`"event":"run_failed","receiver":"http://127\\.0\\.0\\.1:${port}","attempts":3,"error":"ECONNREFUSED[^"]*".*notification not delivered`));
    expectNoSecret(run.stdout + run.stderr);
    // The same with a successful run: exit 0 stays 0.
    const okRun = await runCli(['export', '--since', isoDay(NOW - 2 * D), '--no-progress'], env(dataDir, { SESSION_ETL_NOTIFY_URL: down.url }));
    expect(okRun.code).toBe(0);
    expect(okRun.stderr).toMatch(/"event":"run_recovered".*"attempts":3.*notification not delivered/);
  });

  it('a receiver that never answers: each attempt is cut off, the run ends with its own exit code', async () => {
    const slow = await startReceiver(false);
    try {
      const dataDir = await tempDir();
      const logger = captureLogger();
      // The command's own output, kept (not printed among the test results).
      const stdout = captureStream();
      const stderr = captureStream();
      const code = await executeRun(
        { reportingUrl: fx.emu.url, apiKey: WRONG_KEY, dataDir, format: 'duckdb' },
        (o) => runExport({ ...o, since: NOW - 2 * D }),
        {
          json: true,
          progress: false,
          logLevel: 'silent',
          notify: { url: slow.url, maxLagSeconds: 26 * H, command: 'export', deps: { logger, attemptTimeoutMs: 300, backoffMs: [50] } },
          output: { stdout: stdout.stream, stderr: stderr.stream },
        },
      );
      expect(code).toBe(1);
      expect(JSON.parse(stdout.text())).toMatchObject({ outcome: 'failed' });
      expect(stderr.text()).toMatch(/^error: export \S+ failed: .*HTTP 401/);
      expect(slow.posts.map((p) => p.json.event)).toEqual(['run_failed', 'run_failed', 'run_failed']);
      const warn = logger.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 'warn');
      expect(warn).toMatchObject({ event: 'run_failed', receiver: receiverOf(slow.url), attempts: 3, error: 'no answer within 300 ms' });
    } finally {
      await slow.close();
    }
  });
});
