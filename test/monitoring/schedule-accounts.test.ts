/**
 * `session-etl schedule --http-port` with an accounts map (docs/accounts.md): /healthz judges each
 * account from its state in the store, the run counters carry an `account` label, the
 * state gauges stand for all accounts, and notifications are per account. Real scheduler process,
 * one emulator per account, a real webhook receiver.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/emulator/index.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { startCli, waitFor } from '../helpers/cli.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { checkExposition, value } from './helpers.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 3 * D;

const fxs = {
  acme: useEmulator({ seed: 21, apiKey: 'key-of-acme-0123456789', from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 30 }, { prefix: 'session-etl-schedule-accounts-' }),
  globex: useEmulator({ seed: 22, apiKey: 'key-of-globex-0123456789', from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 30 }, { prefix: 'session-etl-schedule-accounts-' }),
};
/** Each account's emulator (after beforeAll). */
const emus: Record<'acme' | 'globex', Emulator> = {
  get acme() {
    return fxs.acme.emu;
  },
  get globex() {
    return fxs.globex.emu;
  },
};
const dirs: string[] = [];
const children: Array<ReturnType<typeof startCli>> = [];
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver('hook/secret-hook-token-4711');
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await receiver.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function scheduleAccounts(env: Record<string, string>) {
  const root = await mkdtemp(join(tmpdir(), 'session-etl-schedule-accounts-'));
  dirs.push(root);
  const config = join(root, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      dataDir: join(root, 'data'),
      startDate: isoDay(FROM),
      notifyUrl: receiver.url,
      accounts: { acme: { apiKeyEnv: 'ACME_KEY', reportingUrl: emus.acme!.url }, globex: { apiKeyEnv: 'GLOBEX_KEY', reportingUrl: emus.globex!.url } },
    }),
    { mode: 0o600 },
  );
  const s = startCli(['schedule', '--config', config, '--cron', '0 0 1 1 *', '--http-port', '0', '--run-now', '--json', '--log-level', 'warn'], env);
  children.push(s);
  let base = '';
  await waitFor(() => {
    const m = /^Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/m.exec(s.output());
    if (m) base = m[1]!;
    return Boolean(m) || s.exitCode !== null;
  }, 30_000, 'the metrics URL');
  expect(base, s.output()).not.toBe('');
  await waitFor(() => /"job":"nightly-export","accounts"/.test(s.output()), 60_000, 'the scheduled run over the accounts');
  // The monitor's run end comes after the job's report: wait for the counters.
  let text = '';
  await waitFor(async () => /session_etl_runs_total\{[^}]*account="globex"[^}]*\} 1/.test((text = await (await fetch(`${base}/metrics`)).text())), 30_000, 'the counters of both accounts');
  const h = await fetch(`${base}/healthz`);
  return { s, root, text, health: { status: h.status, body: (await h.json()) as { healthy: boolean; reasons: string[] } } };
}

describe('schedule --http-port with accounts', () => {
  it('every account healthy: /healthz 200, counters per account, gauges from the accounts’ own stores', async () => {
    const { s, text, health } = await scheduleAccounts({ ACME_KEY: emus.acme!.apiKey, GLOBEX_KEY: emus.globex!.apiKey });
    // Before: the monitor read the data directory's top, which holds no store with accounts: "nothing exported yet".
    expect(health.body.reasons).toEqual([]);
    expect(health.status).toBe(200);
    for (const account of ['acme', 'globex']) {
      expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'succeeded', account })).toBe(1);
      expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'failed', account })).toBe(0);
    }
    const stored = emus.acme!.dataset.sessionsStartedIn(FROM, Math.floor(NOW / D) * D).length + emus.globex!.dataset.sessionsStartedIn(FROM, Math.floor(NOW / D) * D).length;
    expect(value(text, 'session_etl_stored_sessions')).toBeGreaterThanOrEqual(stored);
    expect(value(text, 'session_etl_checkpoint_timestamp_seconds')).toBeGreaterThan(NOW - 2 * D);
    expect(value(text, 'session_etl_last_run_failed')).toBe(0);
    expect(checkExposition(text).problems).toEqual([]);
    s.kill('SIGTERM');
    await s.result;
  });

  it('one account failing: /healthz 503 naming it, its counter failed, and a run_failed notification for it alone', async () => {
    const before = receiver.posts.length;
    const { s, text, health } = await scheduleAccounts({ ACME_KEY: emus.acme!.apiKey, GLOBEX_KEY: 'wrong-key-of-globex-99' });
    expect(health.status).toBe(503);
    expect(health.body.reasons.length).toBeGreaterThan(0);
    for (const r of health.body.reasons) expect(r).toMatch(/^account globex: /);
    expect(health.body.reasons[0]).toMatch(/^account globex: last run \S+ \(export\) failed: .*HTTP 401/);
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'failed', account: 'globex' })).toBe(1);
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'succeeded', account: 'acme' })).toBe(1);
    expect(value(text, 'session_etl_last_run_failed')).toBe(1);
    await waitFor(() => receiver.posts.length > before, 20_000, 'the notification');
    const posts = receiver.posts.slice(before);
    expect(posts.map((p) => [p.json.event, p.json.account])).toEqual([['run_failed', 'globex']]);
    expect(JSON.stringify({ bodies: posts.map((p) => p.body), health, text }) + s.output()).not.toMatch(/wrong-key-of-globex-99|secret-hook-token-4711|key-of-acme-0123456789/);
    s.kill('SIGTERM');
    await s.result;
  });
});
