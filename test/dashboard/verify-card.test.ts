/**
 * The dashboard's card for a failed `verify` (issue 38, new user), in a real Chromium against a
 * store made by the real CLI and the emulator: it says what failed and what to run, not "committed
 * windows" and "the next run continues"; its bar is full once the run ended (3 of 3 windows were
 * fetched), not a duration against the longest run; the health box says "Failing" once.
 */
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { startDashboardCli, type RunningDashboard } from './fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const TODAY = Math.floor(NOW / D) * D;
const FROM = TODAY - 5 * D;
const END = TODAY - 2 * D;

const fx = useEmulator({ seed: 42, from: FROM - 30 * D, to: TODAY, now: NOW, sessionsPerDay: 30 }, { prefix: 'session-etl-verify-card-' });
let dash: RunningDashboard | undefined;
afterAll(async () => {
  await dash?.stop();
});

describe('the dashboard after a failed verify', () => {
  it('its card says what failed and what to run, its bar is full, the health box says Failing once', async () => {
    const dataDir = join(await fx.tempDir(), 'data');
    const env = fx.env(dataDir);
    const range = ['--from', isoDay(FROM), '--to', isoDay(END)];
    // A long backfill first, so that the verify is not the longest run.
    expect((await runCli(['backfill', '--from', isoDay(FROM - 20 * D), '--to', isoDay(END), '--chunk', '6h', '--no-progress'], env)).code).toBe(0);
    fx.emu.setFaults({ amend: [{ day: isoDay(FROM + D), count: 2 }] });
    const verify = await runCli(['verify', ...range, '--no-progress'], env);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain('windows        3 of 3 fetched');

    dash = await startDashboardCli(['--data-dir', dataDir, '--max-lag', '30d'], env);
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.goto(dash.printed);
      const card = page.locator('[data-testid=run][data-status=failed]').first();
      await card.waitFor();
      expect((await card.locator('.run-head strong').innerText()).trim()).toBe('verify');
      const after = await card.locator('[data-testid=run-after]').innerText();
      expect(after).toBe('It fetched 3 windows and compared them: the store differs from the source on the days the error names. Run the command it gives to make the store equal the source.');
      expect(await card.innerText()).not.toMatch(/Committed before it stopped|next run continues/);
      expect(await card.locator('.error').innerText()).toContain(`with \`session-etl verify ${range.join(' ')} --data-dir ${dataDir} --repair\``);
      // The bar of a run that ended is full, whatever its duration against the longest run shown.
      const bar = await card.locator('[data-testid=run-bar]').boundingBox();
      const fill = await card.locator('[data-testid=run-bar] .bar-fill').boundingBox();
      expect(fill!.width).toBeCloseTo(bar!.width, 0);

      const health = await page.locator('#health').innerText();
      expect(health.match(/failing/gi), health).toHaveLength(1);
      expect(await page.locator('#health-summary').innerText()).toMatch(/^Checkpoint .* behind now, last run failed, no holes$/);
    } finally {
      await browser.close();
    }
  });
});
