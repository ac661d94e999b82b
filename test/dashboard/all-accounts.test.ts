/**
 * The all-accounts page (issue 42, "the dashboard has no all-accounts view"): with an accounts map
 * (or a many-account data directory read without it) and no --account, the dashboard lists every
 * account with the figures `status --json` gives for it and the verdict of `status --check`, and
 * each account's page is /?account=NAME on the same server. A real many-account backfill from the
 * emulator, the dashboard as a real process, and a real Chromium.
 */
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeAccountsConfig } from '../helpers/accounts-config.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';
import { startDashboardCli, type RunningDashboard } from './fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;
const TO = FROM + 3 * D;

const fx = useEmulator(
  {
    seed: 4,
    from: FROM - D,
    to: NOW,
    now: NOW,
    accounts: [
      { name: 'acme', apiKey: 'all-key-acme-1', seed: 41, sessionsPerDay: 30 },
      { name: 'globex', apiKey: 'all-key-globex-1', seed: 42, sessionsPerDay: 20 },
      { name: 'initech', apiKey: 'all-key-initech-1', seed: 43, sessionsPerDay: 10 },
    ],
  },
  { prefix: 'session-etl-all-accounts-' },
);

const env = { A: 'all-key-acme-1', G: 'all-key-globex-1', I: 'all-key-initech-1' };
let data: string;
let config: string;
let browser: Browser;

beforeAll(async () => {
  const root = await fx.tempDir();
  data = join(root, 'data');
  config = join(root, 'config.json');
  await writeAccountsConfig(config, { dataDir: data, reportingUrl: fx.emu.url }, { acme: 'A', globex: 'G', initech: 'I' });
  const ok = async (args: string[]) => {
    const r = await runCli([...args, '--json', '--log-level', 'error'], env);
    if (r.code !== 0) throw new Error(`session-etl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  };
  // Every account backfilled; then acme once more (nothing new), globex over a range that leaves
  // a hole after its first backfill (stale), and initech's failing (failing).
  await ok(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(TO)]);
  await ok(['backfill', '--config', config, '--account', 'acme', '--from', isoDay(FROM), '--to', isoDay(TO)]);
  await ok(['backfill', '--config', config, '--account', 'globex', '--from', isoDay(TO + D), '--to', isoDay(TO + 2 * D)]);
  // initech's last run fails (every request answered 500): failing.
  fx.emu.setFaults({ serverErrorRate: 1 });
  const failed = await runCli(['backfill', '--config', config, '--account', 'initech', '--from', isoDay(TO), '--to', isoDay(TO + D), '--max-attempts', '1', '--log-level', 'error'], env);
  fx.emu.setFaults({});
  if (failed.code !== 1) throw new Error(`the failing backfill exited ${failed.code}: ${failed.stderr}`);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
}, 180_000);
afterAll(async () => {
  await browser?.close();
});

interface Row {
  account: string;
  link: string;
  sessions: number | null;
  checkpoint: string | null;
  health: { state: string; healthy: boolean; reasons: string[] };
  lastRun: { runId: string; outcome: string; sessionsNew: number; sessionsUpdated: number; sessionsUnchanged: number; sessionsWritten: number } | null;
}

/** acme healthy; globex with a hole between its two backfills; initech's last run failed. */
const HEALTH: Record<string, string> = { acme: 'ok', globex: 'stale', initech: 'failing' };

/** What `status --json` and `status --check --json` say of each account. */
async function statusOfAccounts(args: string[]) {
  const s = await runCli(['status', ...args, '--json']);
  expect(s.code, s.stderr).toBe(0);
  const c = await runCli(['status', ...args, '--check', '--max-lag', '30d', '--json']);
  const status = JSON.parse(s.stdout) as { accounts: Array<{ account: string; status: { rows: number; checkpoint: string; lastRuns: Array<Record<string, unknown>> } }> };
  const check = JSON.parse(c.stdout) as { accounts: Array<{ account: string; healthy: boolean; reasons: string[] }> };
  return { status, check };
}

/** Each account's row of /api/accounts against status: the same figures and the same verdict. */
async function expectRowsAsStatus(dash: RunningDashboard, statusArgs: string[]) {
  const res = await dash.fetch('api/accounts');
  expect(res.status).toBe(200);
  const rows = ((await res.json()) as { accounts: Row[] }).accounts;
  const { status, check } = await statusOfAccounts(statusArgs);
  expect(rows.map((r) => r.account)).toEqual(['acme', 'globex', 'initech']);
  for (const row of rows) {
    const s = status.accounts.find((a) => a.account === row.account)!.status;
    const last = s.lastRuns.find((r) => r.outcome !== 'running')!;
    expect(row.sessions).toBe(s.rows);
    expect(row.sessions).toBeGreaterThan(0);
    expect(row.checkpoint).toBe(s.checkpoint);
    expect(row.lastRun).toMatchObject({
      runId: last.run_id,
      outcome: last.outcome,
      sessionsNew: last.sessions_new,
      sessionsUpdated: last.sessions_updated,
      sessionsWritten: last.sessions_written,
      sessionsUnchanged: Number(last.sessions_written) - Number(last.sessions_new) - Number(last.sessions_updated),
    });
    const verdict = check.accounts.find((a) => a.account === row.account)!;
    expect(row.health.healthy).toBe(verdict.healthy);
    expect(row.health.reasons.length).toBe(verdict.reasons.length);
    expect(row.health.state).toBe(HEALTH[row.account]);
    expect(verdict.healthy).toBe(HEALTH[row.account] === 'ok');
    expect(row.link).toBe(`/?account=${row.account}`);
  }
  // acme's last run is its second backfill: nothing new.
  const acme = rows.find((r) => r.account === 'acme')!;
  expect(acme.lastRun!.sessionsNew).toBe(0);
  expect(rows.find((r) => r.account === 'initech')!.lastRun!.outcome).toBe('failed');
  return rows;
}

describe('the all-accounts page', () => {
  it('with an accounts map and no --account: /api/accounts gives status --json’s figures per account and status --check’s verdict; each account’s routes take account=NAME', async () => {
    const dash = await startDashboardCli(['--config', config, '--max-lag', '30d'], env);
    try {
      const rows = await expectRowsAsStatus(dash, ['--config', config]);
      // One account's overview on the same server: its own figures.
      const globex = (await (await dash.fetch('api/overview?account=globex')).json()) as { account: string; totalSessions: number };
      expect(globex.account).toBe('globex');
      expect(globex.totalSessions).toBe(rows.find((r) => r.account === 'globex')!.sessions);
      const coverage = (await (await dash.fetch('api/coverage?account=globex')).json()) as { gaps: Array<{ command: string }> };
      expect(coverage.gaps.length).toBeGreaterThan(0);
      for (const g of coverage.gaps) expect(g.command).toMatch(/ --config \S+ --account globex$/);
      const sessions = (await (await dash.fetch('api/sessions?account=initech&pageSize=5')).json()) as { total: number };
      expect(sessions.total).toBe(rows.find((r) => r.account === 'initech')!.sessions);
      // Without the account, or another: refused, naming the accounts.
      const none = await dash.fetch('api/overview');
      expect(none.status).toBe(400);
      expect(((await none.json()) as { error: string }).error).toMatch(/shows 3 accounts: give account=NAME \(one of acme, globex, initech\)/);
      const unknown = await dash.fetch('api/overview?account=nope');
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as { error: string }).error).toMatch(/no account "nope" here; the accounts are: acme, globex, initech/);
      // Same access rule as every API route: no token, no figures.
      expect((await fetch(new URL('api/accounts', dash.url))).status).toBe(401);
      // A CSV download of one account: a one-use ticket, the account's rows only.
      const ticket = ((await (await dash.fetch('api/download', { method: 'POST' })).json()) as { ticket: string }).ticket;
      const csv = await fetch(new URL(`api/sessions.csv?account=initech&ticket=${ticket}`, dash.url));
      expect(csv.status).toBe(200);
      expect(csv.headers.get('x-total-count')).toBe(String(rows.find((r) => r.account === 'initech')!.sessions));
    } finally {
      await dash.stop();
    }
  }, 180_000);

  it('a many-account data directory without --config: the accounts its store holds, as status reads them', async () => {
    const dash = await startDashboardCli(['--data-dir', data, '--max-lag', '30d'], {});
    try {
      await expectRowsAsStatus(dash, ['--data-dir', data]);
    } finally {
      await dash.stop();
    }
  }, 180_000);

  it('with --parquet-url, several accounts and no --account: refused (exit 2), naming the accounts', async () => {
    const r = await runCli(['dashboard', '--config', config, '--parquet-url', 's3://bucket/prefix', '--port', '0'], env);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/with --parquet-url \(or parquetUrl\), the dashboard shows one account: give --account NAME \(one of acme, globex, initech\)/);
  }, 60_000);

  it('--account NAME still shows that account alone, with no list', async () => {
    const dash = await startDashboardCli(['--config', config, '--account', 'globex'], env);
    try {
      expect(((await (await dash.fetch('api/accounts')).json()) as { accounts: unknown }).accounts).toBeNull();
      expect(((await (await dash.fetch('api/overview')).json()) as { account: string }).account).toBe('globex');
    } finally {
      await dash.stop();
    }
  }, 60_000);

  it('in Chromium: the list names every account with its figures, and a click opens that account’s page', async () => {
    const dash = await startDashboardCli(['--config', config, '--max-lag', '30d'], env);
    try {
      const rows = ((await (await dash.fetch('api/accounts')).json()) as { accounts: Row[] }).accounts;
      const page = await browser.newPage();
      await page.goto(dash.printed);
      await page.waitForSelector('[data-testid=account-row]');
      expect(await page.locator('[data-testid=account-link]').allInnerTexts()).toEqual(['acme', 'globex', 'initech']);
      for (const r of rows) {
        const row = page.locator(`[data-testid=account-row][data-account=${r.account}]`);
        expect(Number((await row.locator('[data-testid=account-sessions]').innerText()).replace(/,/g, ''))).toBe(r.sessions);
        expect(await row.locator('[data-testid=account-health]').innerText()).toBe(r.health.state);
        expect(await row.locator('[data-testid=account-checkpoint]').innerText()).toContain(r.checkpoint!);
      }
      expect(await page.locator('[data-testid=account-row][data-account=acme] [data-testid=account-last-run]').innerText()).toMatch(
        new RegExp(`^backfill succeeded \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ: 0 new, 0 updated, ${rows[0]!.lastRun!.sessionsUnchanged} unchanged$`),
      );
      // One account's sections are not shown on the list.
      expect(await page.locator('#health-section').isVisible()).toBe(false);

      await page.locator('[data-testid=account-link]', { hasText: 'globex' }).click();
      await page.waitForURL(/\?account=globex$/);
      await page.waitForSelector('[data-testid=coverage-day]');
      await page.waitForFunction(() => (globalThis as any).document.querySelector('[data-testid=account]').textContent !== '');
      expect(await page.locator('[data-testid=account]').innerText()).toBe('account globex');
      const globex = rows.find((r) => r.account === 'globex')!;
      expect(Number((await page.locator('[data-testid=total-sessions]').innerText()).replace(/,/g, ''))).toBe(globex.sessions);
      expect(await page.locator('[data-testid=accounts]').isVisible()).toBe(false);
      // Its sessions list is globex's alone.
      await page.waitForFunction(() => ((globalThis as any).document.querySelector('[data-testid=page-info]').textContent as string).length > 0);
      expect((await page.locator('[data-testid=page-info]').innerText()).replace(/,/g, '')).toContain(String(globex.sessions));
      // And back to the list.
      await page.locator('[data-testid=all-accounts]').click();
      await page.waitForSelector('[data-testid=account-row]');
      await page.close();
    } finally {
      await dash.stop();
    }
  }, 180_000);
});
