/**
 * After a run dies, the dashboard shows what `session-etl status` shows. A real backfill is killed
 * (SIGKILL) after more commits than its last published snapshot holds: the snapshot it published
 * early is put back as state.json, as a run leaves it when it dies right after commits it had no
 * time to publish (a run publishes at most once a second). The real dashboard process is then
 * asked over HTTP and looked at in Chromium; a run started beside it afterwards still succeeds.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { parquetRowsComparable, readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D, day } from './fixture.js';
import { startDashboardCli } from './fixture.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 10 * D;

const fx = useEmulator({ seed: 5, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-died-run-' });
let dataDir: string;
let browser: Browser;
const env = () => ({ REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dataDir });

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'session-etl-dashboard-died-'));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const snapshotNow = () => readFile(join(dataDir, 'state.json'), 'utf8').then((t) => ({ text: t, json: JSON.parse(t) }), () => null);

/** The died run's card on the page, in Chromium: its figures without a false zero, and what it committed. */
async function expectDiedRunCard(url: string, runId: string, committed: string): Promise<void> {
  browser ??= await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage();
  try {
    await page.goto(url);
    const card = page.locator(`[data-testid=run][data-run-id="${runId}"]`);
    await card.waitFor();
    expect(await card.getAttribute('data-status')).toBe('died');
    const figures = await card.locator('[data-testid=run-figures]').innerText();
    expect(figures).toContain('(new and updated not known)');
    expect(figures).toContain('requests, retries, 429s and pauses not known');
    // No zero stands for a figure nobody recorded.
    expect(figures).not.toMatch(/\b0 (sessions?|new|updated|requests?|retries|429s)\b|paused 0s|\?/);
    const after = await card.locator('[data-testid=run-after]').innerText();
    if (committed) expect(after).toContain(committed);
    expect(after).not.toMatch(/\b0 (sessions?|windows?|partitions?)\b/);
  } finally {
    await page.close();
  }
}

describe('after a run dies', () => {
  it('the page shows the figures `status` shows, and says where they come from; a run beside it still succeeds', async () => {
    // Launched here: the tests below ask the dashboard's API only.
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
    fx.emu.setFaults({ latencyMs: 250 });
    const run = startCli(['backfill', '--from', day(FROM), '--to', day(FROM + 8 * D), '--chunk', '6h', '--concurrency', '1'], env());
    let early: { text: string; json: any } | null = null;
    await waitFor(async () => {
      const s = await snapshotNow();
      if (s?.json.running?.progress?.windowsDone >= 1) early = s;
      return early !== null;
    }, 60_000, 'the run to publish its first progress');
    await waitFor(async () => ((await snapshotNow())?.json.running?.progress?.windowsDone ?? 0) >= early!.json.running.progress.windowsDone + 4, 60_000, 'four more commits');
    run.kill('SIGKILL');
    await run.result;
    fx.emu.setFaults({});
    await writeFile(join(dataDir, 'state.json'), early!.text);

    const status = await runCli(['status', '--json', '--data-dir', dataDir]);
    expect(status.code, status.stderr).toBe(0);
    const s = JSON.parse(status.stdout);
    expect(s.checkpoint).not.toBe(early!.json.checkpoint);

    const dash = await startDashboardCli(['--data-dir', dataDir], {});
    try {
      const o = (await (await dash.fetch('api/overview')).json()) as any;
      expect(o.checkpoint).toBe(s.checkpoint);
      expect(o.totalSessions).toBe(s.rows);
      expect(o.pendingRows).toBe(s.pendingRows);
      expect(o.source).toBe('store');
      expect(o.runs[0].outcome).toBe('died');
      expect(o.notice).toMatch(/died \(killed or crashed\) before it published its last figures: these are read from the store itself/);
      const c = (await (await dash.fetch('api/coverage')).json()) as any;
      expect(c.coverage).toEqual(s.coverage);

      const page = await browser.newPage();
      await page.goto(dash.printed);
      await page.waitForSelector('[data-testid=coverage-day]');
      expect(await page.locator('[data-testid=checkpoint]').innerText()).toContain(s.checkpoint.replace('T', ' '));
      expect(await page.locator('#notice').innerText()).toMatch(/read from the store itself, as `session-etl status` shows them/);
      await page.close();

      // The dashboard does not keep the store: the next run opens it and completes.
      const next = await runCli(['backfill', '--from', day(FROM), '--to', day(FROM + 8 * D)], env());
      expect(next.code, next.stderr).toBe(0);
      const after = (await (await dash.fetch('api/overview')).json()) as any;
      expect(after.source).toBe('snapshot');
      expect(after.notice).toBeNull();
      expect(after.runs[0].outcome).toBe('succeeded');
    } finally {
      await dash.stop();
    }
  }, 240_000);

  it.each(['both', 'parquet'] as const)(
    'format %s: a run killed (SIGKILL) after its third commit shows what the store holds of it, in status and on the dashboard, and keeps it once recorded as died',
    async (format) => {
      const dir = await mkdtemp(join(tmpdir(), 'session-etl-dashboard-killed-'));
      try {
        const e = { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dir };
        // The process kills itself (SIGKILL, as kill -9) right after its third commit: no outcome, no figures recorded.
        const args = ['backfill', '--from', day(FROM), '--to', day(FROM + 8 * D), '--chunk', '6h', '--concurrency', '1', '--format', format];
        const killed = await runCli(args, { ...e, SESSION_ETL_CRASH_AT: 'after-commit:3' });
        expect(killed.signal).toBe('SIGKILL');

        const status = await runCli(['status', '--json', '--data-dir', dir]);
        expect(status.code, status.stderr).toBe(0);
        const s = JSON.parse(status.stdout);
        const died = s.lastRuns[0];
        expect(died.outcome).toBe('died');
        // Its windows: the coverage it committed (6 h each; no other run wrote here).
        const windows = s.coverage.reduce((n: number, c: { from: string; to: string }) => n + (Date.parse(c.to) - Date.parse(c.from)) / (6 * 3600 * 1000), 0);
        expect(windows).toBeGreaterThanOrEqual(3);
        const days = new Set(s.coverage.flatMap((c: { from: string; to: string }) => [c.from.slice(0, 10), new Date(Date.parse(c.to) - 1).toISOString().slice(0, 10)])).size;
        expect(died).toMatchObject({ windows, sessions_new: null, sessions_updated: null, partitions_written: days });
        expect(died.sessions_written).toBeGreaterThan(0);
        const text = await runCli(['status', '--data-dir', dir]);
        expect(text.stdout).toContain(`committed before it stopped: ${windows} windows, ${died.sessions_written} sessions, ${days} days (new and updated not known)`);

        const dash = await startDashboardCli(['--data-dir', dir], {});
        try {
          const o = (await (await dash.fetch('api/overview')).json()) as any;
          expect(o.runs[0]).toMatchObject({ outcome: 'died', windows, sessionsWritten: died.sessions_written, sessionsNew: null, sessionsUpdated: null, partitionsWritten: days });
          // In Chromium: what is known is shown, what is not is said to be unknown, never a false zero.
          await expectDiedRunCard(dash.printed, died.run_id, `Committed before it stopped: ${windows} windows, ${died.sessions_written} sessions, ${days} partition${days === 1 ? '' : 's'};`);
        } finally {
          await dash.stop();
        }

        // The next run resumes (the windows committed are not fetched again) and records it as died with those figures.
        const next = await runCli(args, e);
        expect(next.code, next.stderr).toBe(0);
        const after = JSON.parse((await runCli(['status', '--json', '--data-dir', dir])).stdout);
        expect(after.lastRuns[1]).toMatchObject({ run_id: died.run_id, outcome: 'died', windows, sessions_written: died.sessions_written, partitions_written: days });
        // Which are the sessions the store holds as fetched by the killed run, read independently.
        const nextStart = Date.parse(after.lastRuns[0].started_at) / 1000;
        const stored = format === 'both' ? await readDuckDbSessions(dir) : parquetRowsComparable(await readParquetDataset(dir));
        expect(stored.filter((r) => Number(r.extracted_at) < nextStart)).toHaveLength(died.sessions_written);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    240_000,
  );
});
