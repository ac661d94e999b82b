/** `session-etl status --check` on a store whose last run was killed mid-run, and its JSON form. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 8 * D;

const fx = useEmulator({ seed: 13, from: FROM, to: NOW - D, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-status-check-' });
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'session-etl-check-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('status --check', () => {
  it('reports a run whose process was killed as never finished, until a run completes', async () => {
    const env = { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: join(dir, 'data') };
    const ok = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D), '--no-progress'], env);
    expect(ok.code, ok.stderr).toBe(0);
    const healthy = await runCli(['status', '--check', '--max-lag', '30d', '--json'], env);
    expect(healthy.code).toBe(0);
    expect(JSON.parse(healthy.stdout)).toMatchObject({ healthy: true, reasons: [], checkpoint: `${isoDay(FROM + 2 * D)}T00:00:00Z`, lastRun: { kind: 'backfill', outcome: 'succeeded' } });

    // A backfill killed with SIGKILL once its run is logged: its row stays `running`, its lock stays behind.
    fx.emu.setFaults({ latencyMs: 2000 });
    const killed = startCli(['backfill', '--from', isoDay(FROM + 2 * D), '--to', isoDay(FROM + 6 * D), '--concurrency', '1', '--no-progress', '--log-level', 'info'], env);
    await waitFor(() => /backfill started/.test(killed.output()), 30_000, 'the backfill to start');
    killed.kill('SIGKILL');
    await killed.result;
    fx.emu.setFaults({});

    const check = await runCli(['status', '--check', '--max-lag', '30d'], env);
    expect(check.code).toBe(1);
    expect(check.stdout.trim().split('\n')).toEqual([expect.stringMatching(/^UNHEALTHY: last run backfill-\S+ \(backfill\), started \S+Z, never finished: its process was killed or crashed/)]);
    const json = JSON.parse((await runCli(['status', '--check', '--max-lag', '30d', '--json'], env)).stdout);
    expect(json).toMatchObject({ healthy: false, lastRun: { kind: 'backfill', outcome: 'died', endedAt: null } });

    // The same backfill run again takes the dead run's lock over and completes it: healthy again.
    const again = await runCli(['backfill', '--from', isoDay(FROM + 2 * D), '--to', isoDay(FROM + 6 * D), '--no-progress'], env);
    expect(again.code, again.stderr).toBe(0);
    const after = await runCli(['status', '--check', '--max-lag', '30d'], env);
    expect(after.stdout).toMatch(/^OK: /);
    expect(after.code).toBe(0);
  });
});
