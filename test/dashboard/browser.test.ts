/**
 * The dashboard as a person uses it, in a real headless Chromium (Debian's chromium driven by
 * playwright-core) against the real `session-etl dashboard` process over a data directory the real
 * CLI made: what each section shows, a query paged through and downloaded as CSV, no console error,
 * no request to anything but the dashboard, and the page during a running backfill.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli, waitFor } from '../helpers/cli.js';
import { readParquetDataset } from '../helpers/read-store.js';
import { D, day, FROM, HOLE, makeFixture, startDashboardCli, type Fixture, type RunningDashboard } from './fixture.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let fx: Fixture;
let dash: RunningDashboard;
let browser: Browser;
let page: Page;
const requests: string[] = [];
const consoleErrors: string[] = [];
let rows: Array<Record<string, unknown>>;

beforeAll(async () => {
  fx = await makeFixture();
  dash = await startDashboardCli(['--data-dir', fx.dataDir], {});
  rows = (await readParquetDataset(fx.dataDir)).flatMap((p) => p.rows);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  // The address as printed, with its token: the page trades it for a session cookie.
  await page.goto(dash.printed);
  await page.waitForSelector('[data-testid=coverage-day]');
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await dash?.stop();
  await fx?.cleanup();
});

const attr = (sel: string, name: string) => page.locator(sel).getAttribute(name);
const text = (sel: string) => page.locator(sel).innerText();

describe('the dashboard in a browser', () => {
  it('shows health with its reason, the checkpoint, the stored sessions, the calendar with the hole and its command, the runs, the charts', async () => {
    expect(await attr('[data-testid=health]', 'data-state')).toBe('failing');
    expect(await text('[data-testid=health]')).toMatch(/last run backfill-\S+ \(backfill\) failed/);
    expect((await text('[data-testid=total-sessions]')).replace(/,/g, '')).toBe(String(rows.length));
    expect(await text('[data-testid=checkpoint]')).toContain(`${day(HOLE.from)} 00:00:00Z`);

    const days = page.locator('[data-testid=coverage-day]');
    const today = day(Math.floor(Date.now() / 1000));
    expect(await days.count()).toBe(Math.round((Date.parse(today) / 1000 - FROM) / D) + 1);
    expect(await attr(`[data-testid=coverage-day][data-date="${day(FROM)}"]`, 'data-state')).toBe('covered');
    for (const t of [HOLE.from, HOLE.from + D]) expect(await attr(`[data-testid=coverage-day][data-date="${day(t)}"]`, 'data-state')).toBe('hole');
    await page.click(`[data-testid=coverage-day][data-date="${day(HOLE.from + D)}"]`);
    expect(await text('[data-testid=day-command]')).toBe(`session-etl backfill --from ${day(HOLE.from)} --to ${day(HOLE.to)} --data-dir ${fx.dataDir}`);

    const runs = page.locator('[data-testid=run]');
    expect(await runs.evaluateAll((els) => els.map((e) => e.getAttribute('data-status')))).toEqual(['failed', 'succeeded', 'succeeded']);
    expect(await runs.first().innerText()).toMatch(/Error: window \S+ failed: the reporting endpoint answered HTTP 5\d\d/);
    expect(await runs.first().innerText()).toMatch(/Committed before it stopped/);
    expect(await page.locator('[data-testid=run-timeline] .seg').evaluateAll((els) => els.map((e) => e.className))).toEqual(['seg failed', 'seg succeeded', 'seg succeeded']);

    expect(await page.locator('[data-testid=chart-per-day] canvas').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-testid=chart-types] .hbar').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-testid=chart-agents] .hbar').count()).toBeGreaterThan(0);
  });

  it('a query typed in the box, paged through, and downloaded as CSV', async () => {
    const recorded = rows.filter((r) => r.recording === true).map((r) => String(r.session_id));
    await page.fill('#q-filter', 'recording="true"');
    await page.fill('#q-sort', 'id asc');
    await page.fill('#q-fields', 'id,started,recording');
    await page.click('#q-run');
    const of = `of ${recorded.length.toLocaleString('en-US')} sessions`;
    await waitFor(async () => (await text('[data-testid=page-info]')).includes(of), 20_000, `the first page of the answer (${of})`);
    expect(await text('[data-testid=page-info]')).toMatch(/^1–25 of/);
    const firstIds = async () => page.locator('[data-testid=session-row] td:first-child').allInnerTexts();
    const sorted = [...recorded].sort();
    expect(await firstIds()).toEqual(sorted.slice(0, 25));
    await page.click('[data-testid=next-page]');
    await waitFor(async () => (await text('[data-testid=page-info]')).startsWith('26–50'), 20_000, 'the second page');
    expect(await firstIds()).toEqual(sorted.slice(25, 50));

    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=csv-download]')]);
    const csv = (await readFile((await download.path())!, 'utf8')).trimEnd().split('\r\n');
    expect(csv[0]).toBe('id,started,recording');
    expect(csv.slice(1).map((l) => l.split(',')[0])).toEqual(sorted);
    expect(csv.slice(1).every((l) => l.endsWith(',true'))).toBe(true);

    // A mistake in the filter: the reason on the page (and Chromium's own note of the 400 in the console, the only one allowed).
    const errorsBefore = consoleErrors.length;
    await page.fill('#q-filter', 'recording="true');
    await page.click('#q-run');
    await page.waitForSelector('[data-testid=sessions-error]:not([hidden])');
    expect(await text('[data-testid=sessions-error]')).toMatch(/filter/);
    expect(consoleErrors.splice(errorsBefore)).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
  });

  it('no console errors, and no request went anywhere but the dashboard on 127.0.0.1', () => {
    expect(consoleErrors).toEqual([]);
    expect(requests.length).toBeGreaterThan(5);
    for (const u of requests) expect(new URL(u).host).toBe(new URL(dash.url).host);
  });

  it('while a backfill runs: the page shows its progress and refreshes itself; the run goes on and succeeds', async () => {
    fx.emu.setFaults({ latencyMs: 700 });
    const run = startCli(['backfill', '--from', day(FROM + 8 * D), '--to', day(FROM + 11 * D), '--chunk', '6h', '--concurrency', '1', '--json'], fx.env());
    try {
      // Once the run has published its first snapshot, a person opens the page.
      const state = () => readFile(join(fx.dataDir, 'state.json'), 'utf8').then(JSON.parse, () => null);
      await waitFor(async () => (await state())?.running?.progress !== undefined, 30_000, 'the run to publish its progress');
      await page.reload();
      await page.waitForSelector('[data-testid=live-run]:not([hidden])', { timeout: 30_000 });
      expect(await attr('[data-testid=live-run]', 'data-windows-total')).toBe('12');
      expect(await page.locator('[data-testid=run]').first().getAttribute('data-status')).toBe('running');
      // Without a reload: the page refreshes itself while the run goes.
      await waitFor(async () => Number(await attr('[data-testid=live-run]', 'data-windows-done')) >= 2, 60_000, 'progress on the page');
      expect(await text('[data-testid=live-run]')).toMatch(/\d+ of 12 windows · [\d,]+ sessions so far/);
    } finally {
      fx.emu.setFaults({});
    }
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).outcome).toBe('succeeded');
    // The page sees the end of the run by itself too.
    await page.waitForSelector('[data-testid=live-run][hidden]', { state: 'attached', timeout: 30_000 });
    expect(await page.locator('[data-testid=run]').first().getAttribute('data-status')).toBe('succeeded');
    expect(consoleErrors).toEqual([]);
  });
});
