/** `export`/`backfill --metrics-file`: the textfile-collector exposition written after a cron run. */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { runCli } from '../helpers/cli.js';
import { checkExposition, samples, value } from './helpers.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 6 * D;

const fx = useEmulator({ seed: 12, from: FROM, to: FROM + 5 * D, now: NOW, sessionsPerDay: 50 }, { prefix: 'session-etl-metrics-file-' });
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'session-etl-metrics-file-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const env = (dataDir: string, key = fx.emu.apiKey) => ({ REPORTING_URL: fx.emu.url, REPORTING_API_KEY: key, SESSION_ETL_DATA_DIR: dataDir });

describe('--metrics-file (textfile collector)', () => {
  it('is written after a backfill and an export, failed ones included, atomically and without process metrics', async () => {
    const dataDir = join(dir, 'data');
    const textfiles = join(dir, 'textfile');
    await mkdir(textfiles);
    const file = join(textfiles, 'session_etl.prom');

    const b = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D), '--metrics-file', file, '--no-progress'], env(dataDir));
    expect(b.code, b.stderr).toBe(0);
    let text = await readFile(file, 'utf8');
    const stored = (await readDuckDbSessions(dataDir)).length;
    // The vendor's windows are closed (docs/data.md, "Partial days"): a session that started exactly at
    // --to's midnight is stored too. The dataset moves with the date, so some days have one.
    expect(stored).toBe(fx.emu.dataset.sessionsStartedIn(FROM, FROM + 2 * D + 1).length);
    expect(value(text, 'session_etl_runs_total', { command: 'backfill', outcome: 'succeeded' })).toBe(1);
    expect(value(text, 'session_etl_sessions_written_total')).toBe(stored);
    expect(value(text, 'session_etl_stored_sessions')).toBe(stored);
    expect(value(text, 'session_etl_checkpoint_timestamp_seconds')).toBe(FROM + 2 * D);
    expect(value(text, 'session_etl_last_run_failed')).toBe(0);
    expect(samples(text).filter((s) => !s.name.startsWith('session_etl_'))).toEqual([]);
    expect(checkExposition(text)).toEqual({ code: 0, problems: [] });

    // An export picks up from the checkpoint: the file holds this run's counters, the store's gauges.
    const e = await runCli(['export', '--metrics-file', file, '--no-progress'], env(dataDir));
    expect(e.code, e.stderr).toBe(0);
    text = await readFile(file, 'utf8');
    const total = (await readDuckDbSessions(dataDir)).length;
    expect(total).toBe(fx.emu.dataset.sessionsStartedIn(FROM, FROM + 5 * D).length);
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'succeeded' })).toBe(1);
    expect(samples(text).some((s) => s.labels.command === 'backfill')).toBe(false);
    expect(value(text, 'session_etl_stored_sessions')).toBe(total);
    expect(value(text, 'session_etl_checkpoint_lag_seconds')).toBeGreaterThanOrEqual(600);
    expect(value(text, 'session_etl_checkpoint_lag_seconds')).toBeLessThan(600 + 120);

    // A failed export still writes the file: that is what the alert needs.
    const f = await runCli(['export', '--metrics-file', file, '--no-progress'], env(dataDir, 'wrong-key-0123456789'));
    expect(f.code).toBe(1);
    text = await readFile(file, 'utf8');
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'failed' })).toBe(1);
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'succeeded' })).toBe(0);
    expect(value(text, 'session_etl_last_run_failed')).toBe(1);
    expect(value(text, 'session_etl_stored_sessions')).toBe(total);
    expect(text).not.toContain('wrong-key-0123456789');
    expect(checkExposition(text)).toEqual({ code: 0, problems: [] });
    // Only the file itself: no temporary left behind for the collector to trip on.
    expect(await readdir(textfiles)).toEqual(['session_etl.prom']);
  });

  it('a run that fails before it starts (first export without --since) is counted as failed', async () => {
    const file = join(dir, 'first.prom');
    const r = await runCli(['export', '--metrics-file', file, '--no-progress'], env(join(dir, 'empty')));
    expect(r.code).toBe(2);
    const text = await readFile(file, 'utf8');
    expect(value(text, 'session_etl_runs_total', { command: 'export', outcome: 'failed' })).toBe(1);
    expect(value(text, 'session_etl_last_run_failed')).toBe(1);
    expect(value(text, 'session_etl_checkpoint_timestamp_seconds')).toBeNaN();
  });

  it('is readable by node_exporter (another user): mode 0644 exactly, whatever the umask (the CLI\'s is 027)', async () => {
    const file = join(dir, 'mode.prom');
    const r = await runCli(['export', '--metrics-file', file, '--no-progress'], env(join(dir, 'empty-mode')));
    expect(r.code).toBe(2);
    expect((await stat(file)).mode & 0o777).toBe(0o644);
  });

  it('a path whose directory does not exist exits 2 before the run', async () => {
    const dataDir = join(dir, 'never');
    const r = await runCli(['export', '--since', isoDay(FROM), '--metrics-file', join(dir, 'no-such-dir', 'x.prom')], env(dataDir));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--metrics-file .*no-such-dir.* does not exist/);
    expect(existsSync(dataDir)).toBe(false);
  });
});
