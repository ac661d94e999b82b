/**
 * Issue 34's "Done when", end to end with the real CLI against the real emulator over HTTP: a
 * backfill over a range where the endpoint held back most of one day flags that day, and only that
 * day, in `status`, `status --check`, `/healthz` (and the metrics), the dashboard's API and a
 * `volume_anomaly` notification (once); after the records arrive `verify` names the day and the
 * number missing; `verify --repair` makes the table and the dataset (read back with hyparquet) equal
 * the source; a second `verify` is clean and the anomaly is gone everywhere. The dashboard is checked
 * through its API and in a real headless Chromium (Debian's, as test/dashboard/browser.test.ts).
 */
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { expectedRow, parquetRowsComparable, readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startDashboardCli, type RunningDashboard } from '../dashboard/fixture.js';
import { value } from '../monitoring/helpers.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const TODAY = Math.floor(NOW / D) * D;
/** Six weeks of history: four weeks before the held day are enough to judge it. */
const FROM = TODAY - 42 * D;
const END = TODAY - 2 * D;
/** The latest weekday before END: weekdays hold ~78 sessions here, weekends ~15 (too few to judge). */
const HELD = (() => {
  for (let t = END - D; ; t -= D) if (![0, 6].includes(new Date(t * 1000).getUTCDay())) return t;
})();

const fx = useEmulator(
  { seed: 34, from: FROM, to: TODAY, now: NOW, sessionsPerDay: 60, faults: { holdBack: [{ day: isoDay(HELD), fraction: 0.85 }] } },
  { prefix: 'session-etl-verify-' },
);
let dataDir: string;
let env: Record<string, string>;
let hook: WebhookReceiver;
let dash: RunningDashboard | undefined;
beforeAll(async () => {
  dataDir = join(await fx.tempDir(), 'data');
  env = fx.env(dataDir);
  hook = await startWebhookReceiver('/hooks/T000/verify');
});
afterAll(async () => {
  await dash?.stop();
  await hook?.close();
});

const range = ['--from', isoDay(FROM), '--to', isoDay(END)];
const json = async (args: string[]) => {
  const r = await runCli(args, env);
  return { ...r, json: JSON.parse(r.stdout) };
};

/** `session-etl schedule --http-port 0` (its cron never fires here): /healthz and /metrics as it reads the store at start. */
async function scheduler(): Promise<{ healthz: { status: number; body: any }; metrics: string }> {
  const s = startCli(['schedule', '--cron', '0 0 1 1 *', '--http-port', '0', '--max-lag', '30d', '--log-level', 'warn'], env);
  try {
    let base = '';
    await waitFor(() => {
      if (s.exitCode !== null) throw new Error(`the scheduler exited ${s.exitCode}: ${s.output()}`);
      base = /^Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/m.exec(s.output())?.[1] ?? '';
      return base !== '';
    }, 30_000, 'the scheduler to print its address');
    const h = await fetch(`${base}/healthz`);
    return { healthz: { status: h.status, body: await h.json() }, metrics: await (await fetch(`${base}/metrics`)).text() };
  } finally {
    s.kill('SIGTERM');
    await s.result;
  }
}

describe('volume anomalies and verify, as a user meets them', () => {
  it('a day the endpoint answered short is flagged everywhere; verify names it, --repair fills it, and then all is clean', async () => {
    const truth = () => fx.emu.dataset.sessionsStartedIn(FROM, END);
    const heldBack = fx.emu.dataset.sessionsStartedIn(HELD, HELD + D).length;

    // The backfill stores the short day as covered: only the volume tells.
    const backfill = await runCli(['backfill', ...range, '--no-progress', '--notify-url', hook.url], env);
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(backfill.stdout).toMatch(new RegExp(`volume +1 anomaly: ${isoDay(HELD)}: ${heldBack} sessions, expected about \\d+`));

    const st = await json(['status', '--json']);
    expect(st.json.volumeAnomalies).toEqual([{ date: isoDay(HELD), sessions: heldBack, expected: expect.any(Number) }]);
    const expected = st.json.volumeAnomalies[0].expected as number;
    expect(expected).toBeGreaterThan(2 * heldBack);
    expect((await runCli(['status'], env)).stdout).toContain(`volume          1 anomaly: ${isoDay(HELD)} (${heldBack} sessions, expected about ${expected})`);

    const check = await runCli(['status', '--check', '--max-lag', '30d'], env);
    expect(check.code).toBe(1);
    expect(check.stdout.trim().split('\n')).toEqual([
      `UNHEALTHY: volume anomaly: ${isoDay(HELD)} holds ${heldBack} sessions, expected about ${expected} (the median of its weekday over the previous weeks): ` +
        `the endpoint may have answered without part of that day; compare it with the source: \`session-etl verify --from ${isoDay(HELD)} --to ${isoDay(HELD + D)} --data-dir ${dataDir}\``,
    ]);

    // One volume_anomaly notification for the day, and not again for the next run that still finds it.
    const anomalyPosts = () => hook.posts.filter((p) => p.json.event === 'volume_anomaly');
    expect(anomalyPosts().map((p) => p.json.volumeAnomaly)).toEqual([{ date: isoDay(HELD), sessions: heldBack, expected }]);
    expect(anomalyPosts()[0]!.json.text).toContain(`VOLUME ANOMALY`);
    const again = await runCli(['backfill', '--from', isoDay(END - D), '--to', isoDay(END), '--no-progress', '--notify-url', hook.url], env);
    expect(again.code, again.stderr).toBe(0);
    expect(anomalyPosts()).toHaveLength(1);

    const before = await scheduler();
    expect(before.healthz.status).toBe(503);
    expect(before.healthz.body.reasons).toEqual([expect.stringContaining(`volume anomaly: ${isoDay(HELD)} holds ${heldBack} sessions`)]);
    expect(value(before.metrics, 'session_etl_volume_anomalies')).toBe(1);

    dash = await startDashboardCli(['--data-dir', dataDir], env);
    const coverage = async () => (await (await dash!.fetch('/api/coverage')).json()) as { days: Array<{ date: string; anomaly?: unknown }> };
    expect((await coverage()).days.filter((d) => d.anomaly)).toEqual([
      expect.objectContaining({
        date: isoDay(HELD),
        state: 'covered',
        anomaly: { sessions: heldBack, expected, command: `session-etl verify --from ${isoDay(HELD)} --to ${isoDay(HELD + D)} --data-dir ${dataDir}` },
      }),
    ]);

    // The page, in a real Chromium: the day's cell is marked, and its detail gives the numbers and the command.
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.goto(dash.printed);
      const marked = page.locator('[data-testid=coverage-day].anomaly');
      await marked.first().waitFor();
      expect(await marked.evaluateAll((cells) => cells.map((c) => c.getAttribute('data-date')))).toEqual([isoDay(HELD)]);
      expect(await marked.getAttribute('title')).toContain(`volume anomaly: ${heldBack} sessions, expected about ${expected}`);
      await marked.click();
      expect(await page.locator('[data-testid=day-anomaly]').innerText()).toContain(`Volume anomaly: ${heldBack} sessions, expected about ${expected}`);
      expect(await page.locator('[data-testid=anomaly-command]').innerText()).toBe(`session-etl verify --from ${isoDay(HELD)} --to ${isoDay(HELD + D)} --data-dir ${dataDir}`);
    } finally {
      await browser.close();
    }

    // The records arrive: verify names the day and the number missing, and nothing else.
    fx.emu.setFaults({});
    const missing = fx.emu.dataset.sessionsStartedIn(HELD, HELD + D).length - heldBack;
    expect(missing).toBeGreaterThan(0);
    const found = await runCli(['verify', ...range, '--no-progress'], env);
    expect(found.code).toBe(1);
    expect(found.stderr).toContain(`the store differs from the source on 1 day(s): ${isoDay(HELD)}: ${missing} missing;`);
    expect(found.stdout).toMatch(new RegExp(`${isoDay(HELD)} +${heldBack + missing} +${heldBack} +${missing} +0 +0 .*differs`));
    const report = (await json(['verify', ...range, '--json'])).json;
    expect(report.verify.days.filter((d: any) => d.missing + d.gone + d.changed > 0).map((d: any) => [d.date, d.missing, d.gone, d.changed])).toEqual([[isoDay(HELD), missing, 0, 0]]);
    expect(report.verify.totals.days).toBe((END - FROM) / D);

    // --repair: the table and the dataset equal the source.
    const repair = await runCli(['verify', ...range, '--repair', '--no-progress'], env);
    expect(repair.code, repair.stderr).toBe(0);
    expect(repair.stdout).toContain(`repaired       ${missing} session(s) committed`);
    const want = truth().map(expectedRow).sort((a, b) => a.session_id.localeCompare(b.session_id));
    const inRange = (r: { started_at?: unknown }) => Number(r.started_at) >= FROM && Number(r.started_at) < END;
    const table = (await readDuckDbSessions(dataDir)).filter(inRange).map(({ extracted_at: _, ...r }) => r);
    expect(table).toEqual(want);
    const dataset = parquetRowsComparable(await readParquetDataset(dataDir)).filter(inRange).map(({ extracted_at: _, ...r }) => r);
    expect(dataset).toEqual(want);

    // A second verify is clean, and the anomaly is gone from status, --check, /healthz, the metrics and the dashboard.
    const clean = await runCli(['verify', ...range, '--no-progress'], env);
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stdout).toMatch(/the store equals the source/);
    expect((await json(['status', '--json'])).json).toMatchObject({ volumeAnomalies: [], lastVerification: { missing: 0, gone: 0, changed: 0, outcome: 'succeeded' } });
    const ok = await runCli(['status', '--check', '--max-lag', '30d'], env);
    expect(ok.stdout).toMatch(/^OK: /);
    expect(ok.code).toBe(0);
    const after = await scheduler();
    expect(after.healthz.status).toBe(200);
    expect(value(after.metrics, 'session_etl_volume_anomalies')).toBe(0);
    expect((await coverage()).days.filter((d) => d.anomaly)).toEqual([]);
  });
});
