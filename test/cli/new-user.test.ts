/**
 * What a new user met (issue 28, "What a new user met"): each test runs the built CLI as a person
 * would and checks what they see — exit codes, messages, output.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/run.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli, startCli, type CliResult } from '../helpers/cli.js';

const D = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;
const TO = FROM + 3 * D;
const day = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);

const fx = useEmulator({ seed: 28, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 80 }, { prefix: 'session-etl-new-user-' });
let dataDir: string;
let stored: number;

beforeAll(async () => {
  dataDir = await fx.tempDir();
  const s = await runBackfill({ reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', from: FROM, to: TO, now: () => NOW * 1000 });
  stored = s.sessions.written;
});

/** Runs the CLI, killed after `ms` (a command that hangs fails the test instead of the suite). */
async function runBounded(args: string[], env: Record<string, string>, ms = 20_000): Promise<CliResult> {
  const child = startCli(args, env);
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  try {
    return await child.result;
  } finally {
    clearTimeout(timer);
  }
}

describe('a data directory that cannot be created', () => {
  it('under /proc: exit 2 "cannot be created" at once, not a loop at full CPU', async () => {
    const r = await runBounded(['export', '--since', day(FROM), '--data-dir', '/proc/session-etl-test/data'], { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey });
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('data directory /proc/session-etl-test/data cannot be created: /proc does not accept new directories');
  });
});
