/**
 * The page over the other kinds of data directories a person opens it on, each made by the real
 * CLI and looked at in a real Chromium: a demo's (`session-etl demo`: no command that cannot work
 * once its emulator is gone, and a "try it" line that pastes), a format duckdb store (why the
 * charts are empty), and one account of many (named on the page).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { writeAccountsConfig } from '../helpers/accounts-config.js';
import { runCli } from '../helpers/cli.js';
import { D, day } from './fixture.js';
import { startDashboardCli, type RunningDashboard } from './fixture.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;

let root: string;
const fx = useEmulator({ seed: 9, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-directories-' });
let browser: Browser;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'session-etl-dashboard-dirs-'));
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await rm(root, { recursive: true, force: true });
});

/** The page of a dashboard, opened at its printed address, once its calendar is drawn. */
async function open(dash: RunningDashboard): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(dash.printed);
  await page.waitForSelector('[data-testid=coverage-day]');
  return page;
}

describe('the page over other data directories', () => {
  it('a demo directory: no command to fill a gap (its emulator is gone), no schedule; its "try it" line pastes into a shell as the command', async () => {
    const dir = join(root, 'demo');
    const demo = await runCli(['demo', '--days', '3', '--sessions-per-day', '50', '--data-dir', dir, '--no-progress']);
    expect(demo.code, demo.stderr).toBe(0);
    const line = demo.stdout.split('\n').find((l) => /^\s+npx session-etl dashboard /.test(l))!;
    // What a shell makes of the line as pasted: exactly the command's words.
    const words = (await promisify(execFile)('bash', ['-c', `set -f; set -- ${line}; printf '%s\\n' "$@"`])).stdout.trimEnd().split('\n');
    expect(words).toEqual(['npx', 'session-etl', 'dashboard', '--data-dir', dir]);

    const dash = await startDashboardCli(['--data-dir', dir], {});
    try {
      const c = (await (await dash.fetch('api/coverage')).json()) as any;
      expect(c.gaps.length).toBeGreaterThan(0);
      for (const x of [...c.gaps, ...c.days]) expect(x.command).toBeNull();
      const page = await open(dash);
      expect(await page.locator('[data-testid=hole-command]').count()).toBe(0);
      expect(await page.locator('[data-testid=calendar-note]').innerText()).toMatch(/A demo directory: its emulator ended with the demo/);
      expect(await page.locator('[data-testid=next-run]').innerText()).toMatch(/^none: a demo directory/);
      expect(await page.locator('body').innerText()).not.toMatch(/session-etl export/);
      await page.close();
    } finally {
      await dash.stop();
    }
  }, 180_000);

  it('a format duckdb store: the page says why there are no charts and no sessions, beside its stored sessions', async () => {
    const dir = join(root, 'duck');
    const env = { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey };
    const r = await runCli(['backfill', '--format', 'duckdb', '--data-dir', dir, '--from', day(FROM), '--to', day(FROM + 3 * D)], env);
    expect(r.code, r.stderr).toBe(0);
    const dash = await startDashboardCli(['--data-dir', dir], {});
    try {
      const page = await open(dash);
      await page.waitForSelector('[data-testid=charts-note]:not([hidden])');
      expect(Number((await page.locator('[data-testid=total-sessions]').innerText()).replace(/,/g, ''))).toBeGreaterThan(0);
      const note = await page.locator('[data-testid=charts-note]').innerText();
      expect(note).toMatch(/stores DuckDB only \(format duckdb\): the charts, the calendar's day counts and the sessions list read the Parquet dataset/);
      expect(await page.locator('#charts').isVisible()).toBe(false);
      await page.waitForFunction(() => ((globalThis as any).document.querySelector('[data-testid=page-info]').textContent as string).length > 0);
      expect(await page.locator('[data-testid=page-info]').innerText()).toMatch(/format duckdb/);
      expect(await page.locator('body').innerText()).not.toMatch(/No sessions in this range|no sessions match/);
      // A day's cell does not claim 0 sessions stored: there is no dataset to count them in.
      expect(await page.locator(`[data-testid=coverage-day][data-date="${day(FROM + D)}"]`).getAttribute('title')).not.toMatch(/stored/);
      await page.close();
    } finally {
      await dash.stop();
    }
  }, 180_000);

  it('dashboard --account: the page names the account', async () => {
    const dir = join(root, 'accounts');
    const config = join(root, 'accounts.json');
    await writeAccountsConfig(config, { dataDir: dir }, { acme: { apiKeyEnv: 'ACME_KEY', reportingUrl: fx.emu.url }, globex: { apiKeyEnv: 'GLOBEX_KEY', reportingUrl: fx.emu.url } });
    const env = { ACME_KEY: fx.emu.apiKey, GLOBEX_KEY: fx.emu.apiKey };
    const r = await runCli(['backfill', '--config', config, '--from', day(FROM), '--to', day(FROM + 2 * D)], env);
    expect(r.code, r.stderr).toBe(0);
    const dash = await startDashboardCli(['--config', config, '--account', 'globex'], env);
    try {
      expect(((await (await dash.fetch('api/overview')).json()) as any).account).toBe('globex');
      const page = await open(dash);
      await page.waitForFunction(() => (globalThis as any).document.querySelector('[data-testid=account]').textContent !== '');
      expect(await page.locator('[data-testid=account]').innerText()).toBe('account globex');
      expect(await page.title()).toMatch(/globex/);
      await page.close();
    } finally {
      await dash.stop();
    }
  }, 180_000);
});
