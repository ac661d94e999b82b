/**
 * Readers beside a run (real processes): a BI tool holding the DuckDB file open, `status` and
 * `sessions` while a run holds it, `status` after a run was killed, and plans too large to hold.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { REPO_ROOT, runCli, startCli, waitFor } from '../helpers/cli.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 12 * D;
const TO = FROM + 10 * D;

const children: ChildProcess[] = [];
const fx = useEmulator(
  { seed: 11, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 60 },
  {
    prefix: 'session-etl-readers-',
    beforeClose: () => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    },
  },
);
const tempDir = () => fx.tempDir();
const env = (dataDir: string, extra: Record<string, string> = {}) => fx.env(dataDir, extra);

/** Another process (a BI tool, say) holding the DuckDB file open read-only until it is sent "close". */
async function openReader(dbPath: string): Promise<ChildProcess> {
  const code = `
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const inst = await DuckDBInstance.create(${JSON.stringify(dbPath)}, { access_mode: 'READ_ONLY' });
    const conn = await inst.connect();
    await conn.run('SELECT count(*) FROM sessions');
    process.stdout.write('open\\n');
    process.stdin.on('data', () => { conn.closeSync(); inst.closeSync(); process.stdout.write('closed\\n'); setTimeout(() => process.exit(0), 10); });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(() => out.includes('open'), 20_000, 'the reader to open the file');
  return child;
}

/** The state snapshot once the run with a run id in it has published it. */
function runningSnapshot(dataDir: string): { running: { runId: string; pid: number } | null } | null {
  try {
    return JSON.parse(readFileSync(join(dataDir, 'state.json'), 'utf8'));
  } catch {
    return null;
  }
}

async function runsTable(dataDir: string): Promise<Array<{ run_id: string; outcome: string; ended_at: unknown; error: string | null }>> {
  const inst = await DuckDBInstance.create(join(dataDir, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
  const c = await inst.connect();
  try {
    const r = await c.runAndReadAll('SELECT run_id, outcome, ended_at, error FROM _runs ORDER BY started_at');
    return r.getRowObjectsJS() as Array<{ run_id: string; outcome: string; ended_at: unknown; error: string | null }>;
  } finally {
    c.closeSync();
    inst.closeSync();
  }
}

describe('readers beside a run (real processes)', () => {
  it('a reader holding sessions.duckdb: a run fails naming it (exit 3); with --wait it waits and succeeds once it closes', async () => {
    const dataDir = await tempDir();
    expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D)], env(dataDir))).code).toBe(0);
    const reader = await openReader(join(dataDir, 'sessions.duckdb'));

    const refused = await runCli(['backfill', '--from', isoDay(FROM + 2 * D), '--to', isoDay(FROM + 3 * D)], env(dataDir));
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`held open by pid ${reader.pid}`);
    expect(refused.stderr).toMatch(/a reader/);
    expect(refused.stderr).not.toMatch(/holding it for writing/);
    expect(refused.stderr).toMatch(/--wait/);
    expect(refused.stderr).toMatch(/Parquet dataset/);
    // The lock is released: nothing is left held.
    expect(existsSync(join(dataDir, '.session-etl.lock'))).toBe(false);

    const waiting = startCli(['backfill', '--from', isoDay(FROM + 2 * D), '--to', isoDay(FROM + 3 * D), '--wait', '--json'], env(dataDir));
    await waitFor(() => /waiting for pid \d+ \(\S+\), a reader, to close the DuckDB file/.test(waiting.output()), 20_000, 'the run to wait');
    expect(waiting.exitCode).toBe(null);
    reader.stdin!.write('close\n');
    const r = await waiting.result;
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).outcome).toBe('succeeded');

    // --wait gives up after --wait-timeout, with exit 3 naming the reader.
    const again = await openReader(join(dataDir, 'sessions.duckdb'));
    const gaveUp = await runCli(['backfill', '--from', isoDay(FROM + 3 * D), '--to', isoDay(FROM + 4 * D), '--wait', '--wait-timeout', '2s'], env(dataDir));
    again.stdin!.write('close\n');
    expect(gaveUp.code).toBe(3);
    expect(gaveUp.stderr).toContain(`pid ${again.pid}`);
    expect(gaveUp.stderr).toMatch(/is still held open by pid \d+ \(\S+\), a reader, after waiting 2s \(--wait-timeout\): close that connection, or give a longer --wait-timeout/);
  });

  it('status and sessions while a run holds the file: status shows the snapshot and the run; sessions reads Parquet or says why not', async () => {
    const dataDir = await tempDir();
    expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D)], env(dataDir))).code).toBe(0);
    fx.emu.setFaults({ latencyMs: 1500 });
    const run = startCli(['backfill', '--from', isoDay(FROM + 2 * D), '--to', isoDay(TO), '--concurrency', '1'], env(dataDir));
    try {
      await waitFor(() => runningSnapshot(dataDir)?.running?.pid === run.pid, 20_000, 'the run to publish its state');
      const st = await runCli(['status'], env(dataDir));
      expect(st.code).toBe(0);
      expect(st.stdout).toMatch(/a run is going: figures as of \d{4}-\d\d-\d\dT/);
      expect(st.stdout).toMatch(new RegExp(`running now\\s+pid ${run.pid} `));
      expect(st.stdout).toMatch(/backfill\s+running/);
      const json = JSON.parse((await runCli(['status', '--json'], env(dataDir))).stdout);
      expect(json.source).toBe('snapshot');
      expect(json.runningNow.pid).toBe(run.pid);
      // Figures as of the run's last commit: at least what the first backfill stored.
      expect(Date.parse(json.checkpoint) / 1000).toBeGreaterThanOrEqual(FROM + 2 * D);
      expect(Date.parse(json.asOf)).toBeGreaterThan(Date.now() - 60_000);

      const viaParquet = await runCli(['sessions', '--format', 'json', '--pageSize', '5'], env(dataDir));
      expect(viaParquet.code).toBe(0);
      expect(viaParquet.stderr).toMatch(/reading the Parquet dataset instead/);
      expect(JSON.parse(viaParquet.stdout).items.length).toBe(5);
      const duck = await runCli(['sessions', '--source', 'duckdb', '--format', 'json'], env(dataDir));
      expect(duck.code).toBe(3);
      // Our message first (DuckDB's own is only the cause below it).
      expect(duck.stderr.split('\n')[0]).toMatch(new RegExp(`^error: .*held by a session-etl run \\(pid ${run.pid}\\).*--source parquet`));
    } finally {
      fx.emu.setFaults({});
    }
    expect((await run.result).code).toBe(0);
    const after = JSON.parse((await runCli(['status', '--json'], env(dataDir))).stdout);
    expect(after.source).toBe('duckdb');
    expect(after.runningNow).toBe(null);
    // The snapshot written at the end says the same as the file.
    const snap = JSON.parse(readFileSync(join(dataDir, 'state.json'), 'utf8'));
    expect(snap.running).toBe(null);
    expect(snap.rows).toBe(after.rows);
    expect(snap.lastRuns[0]).toEqual(after.lastRuns[0]);
  });

  it('after kill -9, status says the run died (not running now), and the next run records it as died', async () => {
    const dataDir = await tempDir();
    fx.emu.setFaults({ latencyMs: 200 });
    const victim = startCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--concurrency', '1', '--json'], env(dataDir));
    try {
      await waitFor(() => runningSnapshot(dataDir)?.running?.pid === victim.pid, 20_000, 'the run to start');
      const victimRun = runningSnapshot(dataDir)!.running!.runId;
      victim.kill('SIGKILL');
      await victim.result;
      fx.emu.setFaults({});

      const st = await runCli(['status'], env(dataDir));
      expect(st.code).toBe(0);
      expect(st.stdout).not.toMatch(/running now\s+pid/);
      expect(st.stdout).toContain(`last run ${victimRun} died (pid ${victim.pid} gone)`);
      const json = JSON.parse((await runCli(['status', '--json'], env(dataDir))).stdout);
      expect(json.runningNow).toBe(null);
      expect(json.lastRuns[0]).toMatchObject({ run_id: victimRun, outcome: 'died' });

      const next = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--json'], env(dataDir));
      expect(next.code).toBe(0);
      expect(JSON.parse(next.stdout).resumed).toBe(true);
      const runs = await runsTable(dataDir);
      const dead = runs.find((r) => r.run_id === victimRun)!;
      expect(dead.outcome).toBe('died');
      expect(dead.ended_at).not.toBe(null);
      expect(dead.error).toContain(`pid ${victim.pid}`);
      expect(runs.filter((r) => r.outcome === 'running')).toEqual([]);
    } finally {
      fx.emu.setFaults({});
    }
  });

  it('a plan too large to hold, or a request rate that would never send, is refused with exit 2 before anything is written', async () => {
    const dataDir = join(await tempDir(), 'never');
    const huge = await runCli(['backfill', '--from', '1970-01-01', '--to', isoDay(FROM), '--chunk', '1s', '--min-chunk', '1s'], env(dataDir));
    expect(huge.code).toBe(2);
    expect(huge.stderr).toMatch(/makes [\d,]+ windows, more than the 1,000,000 one run can plan: give a bigger --chunk \(at least \d+[mhd]/);
    const firstExport = await runCli(['export', '--since', '1970-01-01', '--chunk', '1m'], env(dataDir));
    expect(firstExport.code).toBe(2);
    expect(firstExport.stderr).toMatch(/more than the 1,000,000/);
    for (const rate of ['1e-300', '0.001']) {
      const slow = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--max-requests-per-second', rate], env(dataDir));
      expect({ rate, code: slow.code }).toEqual({ rate, code: 2 });
      expect(slow.stderr).toMatch(/max-requests-per-second .*at least 0\.01/);
    }
    expect(existsSync(dataDir)).toBe(false);
  });
});
