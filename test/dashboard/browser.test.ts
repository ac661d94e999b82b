/**
 * The dashboard as a person uses it, in a real headless Chromium (Debian's chromium driven by
 * playwright-core) against the real `session-etl dashboard` process over a data directory the real
 * CLI made: what each section shows, a query paged through and downloaded as CSV, no console error,
 * no request to anything but the dashboard, and the page during a running backfill.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli, waitFor } from '../helpers/cli.js';
import { parseCsvWithPython } from '../helpers/python-csv.js';
import { readParquetDataset } from '../helpers/read-store.js';
import { D, day, FROM, HOLE, makeFixture, PARTIAL_DAY, startDashboardCli, type Fixture, type RunningDashboard } from './fixture.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const NOW_S = Math.floor(Date.now() / 1000);

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
  // The address as printed, with its token: the page trades it for a session kept in sessionStorage.
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
    expect(await attr(`[data-testid=coverage-day][data-date="${day(HOLE.from + D)}"]`, 'data-state')).toBe('hole');
    await page.click(`[data-testid=coverage-day][data-date="${day(HOLE.from + D)}"]`);
    expect(await text('[data-testid=day-command]')).toBe(`session-etl backfill --from ${day(HOLE.from)} --to ${day(HOLE.to)} --data-dir ${fx.dataDir}`);

    const runs = page.locator('[data-testid=run]');
    expect(await runs.evaluateAll((els) => els.map((e) => e.getAttribute('data-status')))).toEqual(['failed', 'succeeded', 'succeeded']);
    expect(await runs.first().innerText()).toMatch(/Error: window \S+ failed after 1 attempt: the reporting endpoint answered HTTP 5\d\d/); // --max-attempts 1 (fixture.ts)
    expect(await runs.first().innerText()).toMatch(/Committed before it stopped/);
    expect(await page.locator('[data-testid=run-timeline] .seg').evaluateAll((els) => els.map((e) => e.className))).toEqual(['seg failed', 'seg succeeded', 'seg succeeded']);

    expect(await page.locator('[data-testid=chart-per-day] canvas').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-testid=chart-types] .hbar').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-testid=chart-agents] .hbar').count()).toBeGreaterThan(0);
  });

  it('the calendar in the words of `status`, with a shade of its own for days not exported yet, and month and weekday labels', async () => {
    const stateOf = (t: number) => attr(`[data-testid=coverage-day][data-date="${day(t)}"]`, 'data-state');
    // status lists HOLE.from (its midnight only) and FROM+7 (its first hour) as partial days, and one hole.
    expect(await stateOf(HOLE.from)).toBe('partial');
    expect(await stateOf(PARTIAL_DAY)).toBe('partial');
    expect(await stateOf(HOLE.from + D)).toBe('hole');
    expect(await stateOf(FROM + 9 * D)).toBe('not-yet');
    const background = (t: number) =>
      page.locator(`[data-testid=coverage-day][data-date="${day(t)}"]`).evaluate((e) => (globalThis as any).getComputedStyle(e).backgroundColor);
    expect(await background(FROM + 9 * D)).not.toBe(await background(HOLE.from + D));
    expect(await page.locator('[data-testid=coverage-day][data-date="' + day(FROM + 9 * D) + '"]').getAttribute('title')).toMatch(/not exported yet/);
    const months = await page.locator('[data-testid=calendar-month]').allInnerTexts();
    expect(months.length).toBeGreaterThan(0);
    for (const m of months) expect(m).toMatch(/^\d{4}-\d{2}$/);
    expect([day(FROM).slice(0, 7), day(NOW_S).slice(0, 7)]).toContain(months[0]);
    expect((await text('#calendar-weekdays')).split(/\s+/)).toEqual(['Mon', 'Wed', 'Fri', 'Sun']);
    expect(await text('#coverage-title + p')).toMatch(/exported\s+partial day\s+coverage hole\s+not exported yet/);
  });

  it('dates ISO, one style of durations and of numbers, "1 request"; the next run only as what `schedule` would do', async () => {
    expect(await text('[data-testid=checkpoint]')).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z \(\d+ d \d{2} h behind now\)$/);
    // When the page read its figures (relative, so that a fresh load never reads as stale), and when the state was written.
    expect(await text('#as-of')).toMatch(/^read (just now|\d+(\.\d)? s ago) · state written \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z by the last run \(.+ before\)$/);
    expect(await text('[data-testid=health]')).toMatch(/behind now, more than the allowed 26 h 00 min \(--max-lag\)/);
    const failed = await page.locator('[data-testid=run]').first().locator('[data-testid=run-figures]').innerText();
    expect(failed).toMatch(/^0 sessions \(0 new, 0 updated\) · 1 request · 0 retries · 0 429s · paused 0\.0 s$/);
    expect(await text('[data-testid=next-run]')).toMatch(/^would run at \d{4}-\d{2}-\d{2} 02:00:00Z if `session-etl schedule` runs \(cron "0 2 \* \* \*", UTC\)$/);
    expect(await page.locator('#range-from').inputValue()).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    // What Chromium shows in the box is what is typed there, not the locale's M/D/Y of a date input.
    expect(await page.locator('#range-from').evaluate((e) => (e as any).type)).toBe('text');
  });

  it('charts: no line across a hole, the edge bars whole, partial days paler and left out of the median, days on the axis as ISO dates', async () => {
    const show = async (from: number, to: number) => {
      await page.fill('#range-from', day(from));
      await page.fill('#range-to', day(to));
      await Promise.all([
        page.waitForResponse((r) => r.url().endsWith(`/api/charts?from=${day(from)}&to=${day(to)}`)),
        page.click('#range button[type=submit]'),
      ]);
      const days = Math.round((to - from) / D) + 1;
      await page.waitForFunction(([n, f]) => {
        const d = (globalThis as any).document;
        return d.querySelector('#chart-duration')?.uplot?.data[0].length === n && d.querySelector('#range-from').value === f;
      }, [days, day(from)] as const);
    };
    // The first charts (the default range) drawn before a range is asked for.
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#range-from').value !== '');
    await show(FROM, FROM + 6 * D);
    // The line of medians, looked at where the hole is: no pixel of its colour (#3b5ba5) there.
    const lineAtHole = await page.evaluate((t) => {
      const u = ((globalThis as any).document.querySelector('#chart-duration') as any).uplot;
      const x = Math.round(u.valToPos(t, 'x', true));
      const { top, height } = u.bbox;
      const px = u.ctx.getImageData(x - 1, Math.round(top), 3, Math.round(height)).data;
      let hits = 0;
      for (let i = 0; i < px.length; i += 4) if (Math.abs(px[i] - 59) < 40 && Math.abs(px[i + 1] - 91) < 40 && px[i + 2] > 130 && px[i + 3] > 100) hits++;
      return hits;
    }, HOLE.from + D);
    expect(lineAtHole).toBe(0);
    // The bars, looked at just above the x axis: the first and the last are inside the plot, whole.
    const edges = await page.evaluate(() => {
      const u = ((globalThis as any).document.querySelector('#chart-per-day') as any).uplot;
      const { left, top, width, height } = u.bbox;
      const row = u.ctx.getImageData(Math.round(left), Math.round(top + height - 3), Math.round(width), 1).data;
      const green: number[] = [];
      // A bar's fill or outline: green over white (the grid is grey, the text black).
      for (let x = 0; x < row.length / 4; x++) if (row[4 * x + 1] > row[4 * x] + 5 && row[4 * x + 1] > row[4 * x + 2] && row[4 * x + 3] > 0) green.push(x);
      return { first: green[0], last: green.at(-1), width: Math.round(width) };
    });
    expect(edges.first).toBeGreaterThan(2);
    expect(edges.last).toBeLessThan(edges.width - 3);
    const axis = await page.evaluate(() => ((globalThis as any).document.querySelector('#chart-per-day') as any).uplot.axes[0]._values as string[]);
    expect(axis.length).toBeGreaterThan(1);
    for (const v of axis) expect(v).toMatch(/^\d{4}-\d{2}-\d{2}$/);

    // The partial day FROM+7 (its first hour): its few sessions drawn paler, its median left out.
    await show(FROM + 5 * D, FROM + 7 * D);
    const api = (await (await dash.fetch(`api/charts?from=${day(FROM + 5 * D)}&to=${day(FROM + 7 * D)}`)).json()) as any;
    const partial = api.perDay.at(-1);
    expect(partial).toMatchObject({ date: day(PARTIAL_DAY), state: 'partial' });
    expect(partial.sessions).toBeGreaterThan(0);
    expect(partial.medianDurationSeconds).not.toBeNull();
    const drawn = await page.evaluate(() => ({
      bars: ((globalThis as any).document.querySelector('#chart-per-day') as any).uplot.data,
      median: ((globalThis as any).document.querySelector('#chart-duration') as any).uplot.data[1],
    }));
    expect(drawn.bars[1].at(-1)).toBeNull();
    expect(drawn.bars[2].at(-1)).toBe(partial.sessions);
    expect(drawn.median.at(-1)).toBeNull();
    expect(drawn.median[0]).toBeCloseTo(api.perDay[0].medianDurationSeconds / 60);
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
    const csv = parseCsvWithPython(await readFile((await download.path())!, 'utf8'));
    expect(csv[0]).toEqual(['id', 'started', 'recording']);
    expect(csv.slice(1).map((l) => l[0])).toEqual(sorted);
    expect(csv.slice(1).every((l) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(l[1]!) && l[2] === 'true')).toBe(true);

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
      expect(await text('[data-testid=live-run]')).toMatch(/\d+ of 12 windows · [\d,]+ sessions? so far/);
      // Its card: its progress, not the zeros its row holds until it ends.
      const figures = await page.locator('[data-testid=run]').first().locator('[data-testid=run-figures]').innerText();
      expect(figures).toMatch(/^\d+ of 12 windows done · [\d,]+ sessions? so far · requests, retries and 429s are counted at its end$/);
      // The days it has not reached yet are not exported yet, not holes.
      expect(await attr(`[data-testid=coverage-day][data-date="${day(FROM + 10 * D)}"]`, 'data-state')).toBe('not-yet');
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

describe('the browser session: in sessionStorage, sent as a header, never a cookie', () => {
  it('no cookie is set; the token leaves the address bar; a server on another port of 127.0.0.1 gets no credential', async () => {
    // Another local user's server on another port of the same host, recording what the browser sends it.
    const seen: IncomingHttpHeaders[] = [];
    const other = createServer((req, res) => {
      seen.push(req.headers);
      res.setHeader('Content-Type', 'text/html');
      res.end('<!doctype html><title>other</title>');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const context = await browser.newContext();
    try {
      const p = await context.newPage();
      const sent: Array<Record<string, string>> = [];
      p.on('request', (r) => {
        if (new URL(r.url()).pathname.startsWith('/api/')) sent.push(r.headers());
      });
      await p.goto(dash.printed);
      await p.waitForSelector('[data-testid=coverage-day]');
      expect(p.url()).toBe(dash.url);
      expect(await context.cookies()).toEqual([]);
      const kept = await p.evaluate(() => (globalThis as any).sessionStorage.getItem('session-etl-dashboard-session'));
      expect(JSON.parse(kept).id).toMatch(/^[A-Za-z0-9_-]{40,}$/);
      expect(kept).not.toContain(dash.token);
      // Every API request after the first (which trades the token) carries the session, never a cookie.
      expect(sent.length).toBeGreaterThan(2);
      expect(sent[0]!.authorization).toBe(`Bearer ${dash.token}`);
      for (const h of sent.slice(1)) {
        expect(h.authorization).toBe(`Bearer ${JSON.parse(kept).id}`);
        expect(h.cookie).toBeUndefined();
      }
      // The same browser on the other port: nothing of the dashboard's reaches it, nor its pages.
      const port = (other.address() as AddressInfo).port;
      await p.goto(`http://127.0.0.1:${port}/`);
      expect(seen.length).toBeGreaterThan(0);
      for (const h of seen) {
        expect(h.cookie).toBeUndefined();
        expect(h.authorization).toBeUndefined();
      }
      expect(await p.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
      // Back on the dashboard in the same tab: its session is still there, no token needed.
      await p.goto(dash.url);
      await p.waitForSelector('[data-testid=coverage-day]');
      // A new tab has none: the page says how to get in, and asks for nothing.
      const fresh = await context.newPage();
      await fresh.goto(dash.url);
      await fresh.waitForSelector('#notice:not([hidden])');
      expect(await fresh.locator('#notice').innerText()).toMatch(/access token is required: open the address the dashboard printed/);
    } finally {
      await context.close();
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('a session past its time: the page says it expired and how to get in again', async () => {
    const short = await startDashboardCli(['--data-dir', fx.dataDir, '--session-ttl', '2s'], {});
    const context = await browser.newContext();
    try {
      const p = await context.newPage();
      await p.goto(short.printed);
      await p.waitForSelector('[data-testid=coverage-day]');
      const { expiresAt } = JSON.parse(await p.evaluate(() => (globalThis as any).sessionStorage.getItem('session-etl-dashboard-session')));
      await waitFor(() => Date.now() > Date.parse(expiresAt) + 50, 10_000, 'the session to reach its end');
      await p.reload();
      await p.waitForSelector('#notice[data-kind=access]:not([hidden])');
      expect(await p.locator('#notice').innerText()).toMatch(/session of the dashboard has expired: open the address the dashboard printed/);
      expect(await p.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
    } finally {
      await context.close();
      await short.stop();
    }
  });
});
