import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { expectedRow, readDuckDbSessions } from '../helpers/read-store.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 12 * D;
const TO = FROM + 10 * D;

const fx = useEmulator({ seed: 5, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 80 }, { prefix: 'session-etl-cli-' });
const tempDir = () => fx.tempDir();
const env = (dataDir: string, extra: Record<string, string> = {}) => fx.env(dataDir, extra);

function strip<T extends Record<string, unknown>>(rows: T[]) {
  return rows.map(({ extracted_at: _x, ...r }) => r);
}
function truthBetween(from: number, to: number) {
  return fx.emu.dataset
    .sessionsStartedIn(from, to)
    .map(expectedRow)
    .sort((a, b) => a.session_id.localeCompare(b.session_id));
}
async function storedBetween(dataDir: string, from: number, to: number) {
  return strip((await readDuckDbSessions(dataDir)).filter((r) => (r.started_at as number) >= from && (r.started_at as number) < to));
}

describe('CLI operations (real processes)', () => {
  it('--help works and a bad flag exits 2 without writing anything', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/backfill/);
    const dataDir = join(await tempDir(), 'never');
    for (const args of [
      ['backfill', '--from', '2026-02-30', '--to', '2026-03-01'],
      ['backfill', '--from', '2026-03-01', '--to', '2026-02-01'],
      ['backfill', '--from', '2026-01-01', '--to', '2026-01-02', '--concurrency', '0'],
      ['backfill', '--from', '2026-01-01', '--to', '2026-01-02', '--concurrency', '-2'],
      ['backfill', '--from', '2026-01-01', '--to', '2026-01-02', '--format', 'csv'],
      ['backfill', '--from', '2026-01-01', '--to', '2026-01-02', '--chunk', '3y'],
      ['export'],
      ['backfill', '--from', '2026-01-01'],
      ['nonsense'],
    ]) {
      const r = await runCli(args, env(dataDir));
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(/error/i);
      expect(existsSync(dataDir)).toBe(false);
    }
  });

  it('an unwritable data directory, or one holding another program\'s DuckDB file, exits 2', async () => {
    const root = await tempDir();
    const file = join(root, 'a-file');
    await writeFile(file, 'x');
    const r1 = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D)], env(join(file, 'sub')));
    expect(r1.code).toBe(2);
    expect(r1.stderr).toMatch(/data directory .* cannot be/);
    const other = join(root, 'other');
    await mkdir(other);
    await writeFile(join(other, 'sessions.duckdb'), 'not a database at all, just text');
    const r2 = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D)], env(other));
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/not a session-etl DuckDB file/);
  });

  it('two writers at once: one refuses with exit 3 naming the holder; the data is intact', async () => {
    const dataDir = await tempDir();
    fx.emu.setFaults({ latencyMs: 150 });
    const first = startCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--concurrency', '1'], env(dataDir));
    await waitFor(() => existsSync(join(dataDir, '.session-etl.lock', 'holder.json')), 20_000, 'the first run to take the lock');
    const second = await runCli(['export', '--since', isoDay(FROM)], env(dataDir));
    expect(second.code).toBe(3);
    expect(second.stderr).toMatch(new RegExp(`pid ${first.pid}`));
    const r = await first.result;
    fx.emu.setFaults({});
    expect(r.code).toBe(0);
    expect(await storedBetween(dataDir, FROM, TO)).toEqual(truthBetween(FROM, TO));
    // --wait queues behind a holder instead.
    const a = startCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D), '--concurrency', '1'], env(dataDir));
    await waitFor(() => existsSync(join(dataDir, '.session-etl.lock', 'holder.json')), 20_000, 'lock');
    const b = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D), '--wait'], env(dataDir));
    expect((await a.result).code).toBe(0);
    expect(b.code).toBe(0);
  });

  it('a lock left by kill -9 is taken over, and the re-run completes exactly', async () => {
    const dataDir = await tempDir();
    fx.emu.setFaults({ latencyMs: 200 });
    // Killed with SIGKILL, as kill -9 would, at a known step: right after its second window is committed.
    const victim = startCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--concurrency', '1'], env(dataDir, { SESSION_ETL_CRASH_AT: 'after-commit:2' }));
    expect((await victim.result).signal).toBe('SIGKILL');
    expect(existsSync(join(dataDir, '.session-etl.lock'))).toBe(true);
    fx.emu.setFaults({});
    const again = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--json'], env(dataDir));
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).resumed).toBe(true);
    expect(await storedBetween(dataDir, FROM, TO)).toEqual(truthBetween(FROM, TO));
  });

  it('SIGTERM stops the run with 143, commits what finished, and the next run completes exactly', async () => {
    const dataDir = await tempDir();
    fx.emu.setFaults({ latencyMs: 200 });
    const served = fx.emu.stats().recordsServed;
    const run = startCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--concurrency', '1', '--json'], env(dataDir));
    // Stopped at a known step: the emulator has answered the first two days' windows (of ten, one at a time).
    const twoDays = truthBetween(FROM, FROM + 2 * D).length;
    await waitFor(() => fx.emu.stats().recordsServed - served >= twoDays, 20_000, 'the first two windows answered');
    run.kill('SIGTERM');
    const r = await run.result;
    expect(r.code).toBe(143);
    const summary = JSON.parse(r.stdout);
    expect(summary.outcome).toBe('interrupted');
    expect(summary.windows.skipped).toBeGreaterThan(0);
    expect(existsSync(join(dataDir, '.session-etl.lock'))).toBe(false);
    fx.emu.setFaults({});
    const st = await runCli(['status', '--json'], env(dataDir));
    expect(st.code).toBe(0);
    expect(JSON.parse(st.stdout).lastRuns[0].outcome).toBe('interrupted');
    const again = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO)], env(dataDir));
    expect(again.code).toBe(0);
    expect(await storedBetween(dataDir, FROM, TO)).toEqual(truthBetween(FROM, TO));
  });

  it('schedule fires the export on a seconds-level cron and skips an overlapping tick', async () => {
    const dataDir = await tempDir();
    fx.emu.setFaults({ latencyMs: 400 });
    // The first export needs a start: given through a configuration file.
    const cfg = join(dataDir, 'config.json');
    await mkdir(dataDir, { recursive: true });
    await writeFile(cfg, JSON.stringify({ startDate: isoDay(NOW - 3 * D) }));
    const s = startCli(['schedule', '--cron', '*/1 * * * * *', '--concurrency', '1', '--config', cfg], env(dataDir));
    await waitFor(() => /this tick is skipped/.test(s.output()), 30_000, 'a skipped tick');
    await waitFor(() => /job finished/.test(s.output()), 30_000, 'a finished job');
    s.kill('SIGTERM');
    const r = await s.result;
    fx.emu.setFaults({});
    expect(r.stderr).toMatch(/job scheduled/);
    expect(r.stderr).toMatch(/previous run still going: this tick is skipped/);
    expect(r.stderr).toMatch(/job finished/);
    expect([0, 143]).toContain(r.code);
    const st = JSON.parse((await runCli(['status', '--json'], env(dataDir))).stdout);
    expect(st.lastRuns.some((x: { kind: string; outcome: string }) => x.kind === 'export' && x.outcome === 'succeeded')).toBe(true);
  });

  it('status reports checkpoint, lag, holes and runs; config shows sources with the key redacted', async () => {
    const dataDir = await tempDir();
    expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D)], env(dataDir))).code).toBe(0);
    expect((await runCli(['backfill', '--from', isoDay(FROM + 4 * D), '--to', isoDay(FROM + 5 * D)], env(dataDir))).code).toBe(0);
    const st = await runCli(['status'], env(dataDir));
    expect(st.code).toBe(0);
    expect(st.stdout).toMatch(new RegExp(`checkpoint\\s+${isoDay(FROM + 2 * D)}T00:00:00Z  — \\d+d( \\d+h)? behind now`));
    expect(st.stdout).toMatch(new RegExp(`coverage holes\\s+${isoDay(FROM + 2 * D)}T00:00:00Z – ${isoDay(FROM + 4 * D)}T00:00:00Z`));
    expect(st.stdout).toMatch(/backfill\s+succeeded/);
    const cfg = await runCli(['config'], env(dataDir, { REPORTING_API_KEY: 'visible-secret-123' }));
    expect(cfg.stdout).toMatch(/apiKey\s+"\[REDACTED\]"\s+env/);
    expect(cfg.stdout).not.toContain('visible-secret-123');
  });

  it('config shows the format the data directory recorded, not the default for a new one', async () => {
    const dataDir = await tempDir();
    expect((await runCli(['config', '--json'], env(dataDir))).stdout).toContain('{"key":"format","value":"both","source":"default"}');
    expect((await runCli(['backfill', '--format', 'parquet', '--from', isoDay(FROM), '--to', isoDay(FROM + D)], env(dataDir))).code).toBe(0);
    const cfg = await runCli(['config'], env(dataDir));
    expect(cfg.stdout).toMatch(/^format\s+"parquet"\s+recorded in the data directory$/m);
    const given = await runCli(['config', '--json'], env(dataDir, { SESSION_ETL_FORMAT: 'duckdb' }));
    expect(given.stdout).toContain('{"key":"format","value":"duckdb","source":"env"}');
  });
});
