/**
 * A many-account data directory read without its configuration (issue 42 #3): `status` and `status
 * --check` read the accounts its store holds instead of showing an empty one-account store; the
 * dashboard lists them (its all-accounts page) and the scheduler refuses it naming them, as `export` does. With the configuration,
 * the figures the accounts share are marked as the whole store's, and last runs show the unchanged count.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeAccountsConfig } from '../helpers/accounts-config.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';
import { startDashboardCli } from '../dashboard/fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;
const TO = FROM + 3 * D;

const fx = useEmulator(
  {
    seed: 3,
    from: FROM - D,
    to: NOW,
    now: NOW,
    accounts: [
      { name: 'acme', apiKey: 'held-key-acme-1', seed: 31, sessionsPerDay: 30 },
      { name: 'globex', apiKey: 'held-key-globex-1', seed: 32, sessionsPerDay: 20 },
    ],
  },
  { prefix: 'session-etl-held-accounts-' },
);

describe('a many-account data directory without its configuration', () => {
  it('status reads the accounts its store holds, --check judges each, the dashboard lists them', async () => {
    const root = await fx.tempDir();
    const data = join(root, 'data');
    const config = join(root, 'config.json');
    await writeAccountsConfig(config, { dataDir: data, reportingUrl: fx.emu.url }, { acme: 'A', globex: 'G' });
    const env = { A: 'held-key-acme-1', G: 'held-key-globex-1' };
    const b = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'error'], env);
    expect(b.code, b.stderr).toBe(0);
    // Run twice: the second reads every session again, unchanged.
    const again = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'error'], env);
    expect(again.code, again.stderr).toBe(0);

    const withConfig = JSON.parse((await runCli(['status', '--config', config, '--json'], env)).stdout) as { accounts: Array<{ account: string; status: { rows: number; checkpoint: string } }> };
    const rows = Object.fromEntries(withConfig.accounts.map((a) => [a.account, a.status.rows]));
    expect(rows.acme).toBeGreaterThan(0);
    expect(rows.globex).toBeGreaterThan(0);

    const s = await runCli(['status', '--data-dir', data]);
    expect(s.code, s.stderr).toBe(0);
    expect(s.stdout).toMatch(/holds many accounts; without an accounts map \(--config\), the 2 its store holds/);
    expect(s.stdout).not.toContain('(none yet)');
    for (const a of ['acme', 'globex']) {
      const block = s.stdout.split(/^account /m).find((x) => x.startsWith(`${a}\n`))!;
      expect(block, s.stdout).toMatch(new RegExp(`^ {2}rows\\s+${rows[a]}$`, 'm'));
      expect(block).toMatch(/^ {2}partitions\s+\d+ {2}— the whole store's, shared by its 2 accounts$/m);
      expect(block).toMatch(/^ {2}size\s+.*— the whole store's, shared by its 2 accounts$/m);
      // The second run: every session read again unchanged.
      expect(block).toMatch(new RegExp(`backfill succeeded +${rows[a]} sessions \\(0 new, 0 updated, ${rows[a]} unchanged\\)`));
    }
    const json = JSON.parse((await runCli(['status', '--data-dir', data, '--json'])).stdout) as typeof withConfig;
    expect(json.accounts.map((a) => [a.account, a.status.rows, a.status.checkpoint])).toEqual(withConfig.accounts.map((a) => [a.account, a.status.rows, a.status.checkpoint]));

    const check = await runCli(['status', '--data-dir', data, '--check', '--max-lag', '30d']);
    expect(check.stdout).toBe('OK: 2 accounts healthy\n');
    expect(check.code).toBe(0);

    // The dashboard lists the accounts the store holds (test/dashboard/all-accounts.test.ts), not an empty store.
    const dash = await startDashboardCli(['--data-dir', data], {});
    try {
      const list = (await (await dash.fetch('api/accounts')).json()) as { accounts: Array<{ account: string; sessions: number }> };
      expect(list.accounts.map((a) => [a.account, a.sessions])).toEqual([['acme', rows.acme], ['globex', rows.globex]]);
    } finally {
      await dash.stop();
    }
  }, 180_000);

  it('schedule without --config refuses it at start (exit 2) naming its accounts, as export does, instead of serving a /healthz of one empty store', async () => {
    const root = await fx.tempDir();
    const data = join(root, 'data');
    const config = join(root, 'config.json');
    await writeAccountsConfig(config, { dataDir: data, reportingUrl: fx.emu.url }, { acme: 'A', globex: 'G' });
    const b = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--json', '--log-level', 'error'], { A: 'held-key-acme-1', G: 'held-key-globex-1' });
    expect(b.code, b.stderr).toBe(0);
    // With the endpoint and a key given, so that nothing else stops it first.
    const sched = await runCli(['schedule', '--data-dir', data, '--http-port', '0', '--cron', '0 2 * * *'], { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: 'held-key-acme-1' });
    expect(sched.code, sched.stdout).toBe(2);
    expect(sched.stderr).toMatch(/holds many accounts \(acme, globex\), and the configuration has no accounts map: give the configuration file with the accounts \(--config\), or another --data-dir/);
    expect(sched.stdout).not.toMatch(/Metrics:/);
    expect(sched.stderr).not.toContain('held-key-acme-1');
  }, 120_000);
});
