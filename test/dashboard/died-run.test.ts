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
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { D, day } from './fixture.js';
import { startDashboardCli } from './fixture.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 10 * D;

let emu: Emulator;
let dataDir: string;
let browser: Browser;
const env = () => ({ REPORTING_URL: emu.url, REPORTING_API_KEY: emu.apiKey, SESSION_ETL_DATA_DIR: dataDir });

beforeAll(async () => {
  emu = await startEmulator({ seed: 5, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 });
  dataDir = await mkdtemp(join(tmpdir(), 'session-etl-dashboard-died-'));
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await emu?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const snapshotNow = () => readFile(join(dataDir, 'state.json'), 'utf8').then((t) => ({ text: t, json: JSON.parse(t) }), () => null);

describe('after a run dies', () => {
  it('the page shows the figures `status` shows, and says where they come from; a run beside it still succeeds', async () => {
    emu.setFaults({ latencyMs: 250 });
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
    emu.setFaults({});
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
});
