/**
 * A data directory with a known shape, made by the real CLI against the emulator: two backfills
 * with a two-day hole between them, the second ending just after the first session of day FROM+7
 * (a partial day of one session), then a backfill that fails (every request answered 500).
 * And the dashboard started as a real process on port 0.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runCli, startCli, waitFor, type CliResult } from '../helpers/cli.js';
import { D, isoDay as day } from '../helpers/time.js';

export { D, day };
export const NOW = Math.floor(Date.now() / 1000);
/** The first day stored: 12 days before today (UTC). */
export const FROM = Math.floor(NOW / D) * D - 12 * D;
/** The hole: days FROM+3 and FROM+4. */
export const HOLE = { from: FROM + 3 * D, to: FROM + 5 * D };
/** The day the second backfill ends in: a partial day (fx.partialEnd: just after its first session). */
export const PARTIAL_DAY = FROM + 7 * D;

export interface Fixture {
  emu: Emulator;
  dataDir: string;
  /** The end of the second backfill: a second after the first session of PARTIAL_DAY started. */
  partialEnd: number;
  env(extra?: Record<string, string>): Record<string, string>;
  cleanup(): Promise<void>;
}

export async function makeFixture(): Promise<Fixture> {
  const emu = await startEmulator({ seed: 17, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 60 });
  const dataDir = await mkdtemp(join(tmpdir(), 'session-etl-dashboard-'));
  const env = (extra: Record<string, string> = {}) => ({
    REPORTING_URL: emu.url,
    REPORTING_API_KEY: emu.apiKey,
    SESSION_ETL_DATA_DIR: dataDir,
    ...extra,
  });
  const ok = async (args: string[]) => {
    const r = await runCli(args, env());
    if (r.code !== 0) throw new Error(`session-etl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  };
  await ok(['backfill', '--from', day(FROM), '--to', day(HOLE.from)]);
  const partialEnd = emu.dataset.sessionsStartedIn(PARTIAL_DAY, PARTIAL_DAY + D)[0]!.started! + 1;
  await ok(['backfill', '--from', day(HOLE.to), '--to', new Date(partialEnd * 1000).toISOString()]);
  emu.setFaults({ serverErrorRate: 1 });
  const failed = await runCli(['backfill', '--from', day(FROM + 8 * D), '--to', day(FROM + 9 * D), '--max-attempts', '1'], env());
  emu.setFaults({});
  if (failed.code !== 1) throw new Error(`the failing backfill exited ${failed.code}: ${failed.stderr}`);
  return {
    emu,
    dataDir,
    partialEnd,
    env,
    async cleanup() {
      await emu.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface RunningDashboard {
  /** The dashboard's root, without the token. */
  url: string;
  /** The address printed on the first line (with ?token=… when the dashboard made its token). */
  printed: string;
  /** The token every request needs: the one printed, or the fixed one given. */
  token: string;
  /** fetch() of a path on the dashboard with the token as a Bearer header. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Sends SIGTERM and waits for the exit; its result. */
  stop(): Promise<CliResult>;
  output(): string;
  pid: number;
}

/**
 * `session-etl dashboard --port 0 …` as a real process; its address from the first stdout line.
 * `fixedToken`: the token given by --token-file or the environment (the address then has none).
 */
export async function startDashboardCli(args: string[], env: Record<string, string>, fixedToken?: string): Promise<RunningDashboard> {
  const child = startCli(['dashboard', '--port', '0', ...args], env);
  let first: RegExpExecArray | null = null;
  try {
    await waitFor(() => {
      if (child.exitCode !== null) throw new Error(`the dashboard exited ${child.exitCode}: ${child.output()}`);
      first = /^Dashboard: ((http:\/\/\S+\/)(?:\?token=(\S+))?)\n/.exec(child.output());
      return first !== null;
    }, 30_000, 'the dashboard to print its address');
  } catch (err) {
    child.kill('SIGTERM');
    throw err;
  }
  const [, printed, url, printedToken] = first! as unknown as [string, string, string, string | undefined];
  const token = fixedToken ?? printedToken;
  if (!token) {
    child.kill('SIGTERM');
    throw new Error(`the dashboard printed no token and none was given: ${printed}`);
  }
  return {
    url,
    printed,
    token,
    pid: child.pid!,
    fetch: (path, init = {}) =>
      fetch(new URL(path, url), { ...init, headers: { Authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) } }),
    output: () => child.output(),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return child.result;
    },
  };
}
