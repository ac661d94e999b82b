/**
 * The summary on stdout, the logs on stderr only (issue 42, frictions): a run's stdout is its
 * summary and nothing else, at every log level and whether the run succeeds, retries or fails;
 * stderr holds the JSON log lines (stderr is not a terminal here) and the `error:` line. The
 * built CLI against the emulator.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/run.js';
import { runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;

const fx = useEmulator({ seed: 41, from: FROM - D, now: NOW, sessionsPerDay: 30 }, { prefix: 'session-etl-streams-' });

/** Every stderr line is a JSON log line or the error's own lines. */
function expectOnlyLogs(stderr: string): void {
  for (const line of stderr.split('\n').filter(Boolean)) {
    if (line.startsWith('{')) expect(JSON.parse(line) as { level: number; msg: string }).toHaveProperty('msg');
    else expect(line).toMatch(/^(error: |\s+caused by: )/);
  }
}

describe('the summary goes to stdout, the logs to stderr only', () => {
  it.each([
    ['a run under server errors, logging at debug', { serverErrorRate: 0.5 }, ['--max-attempts', '5'], undefined],
    ['a run that fails', { serverErrorRate: 1 }, ['--max-attempts', '2'], 1],
  ] as const)('%s: --json stdout is one JSON object; text stdout holds no log line', async (_what, faults, extra, code) => {
    fx.emu.setFaults(faults);
    try {
      for (const json of [true, false]) {
        const dataDir = join(await fx.tempDir(), 'store');
        const r = await runCli(
          ['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 3 * D), '--concurrency', '1', '--log-level', 'debug', '--no-progress', ...extra, ...(json ? ['--json'] : [])],
          fx.env(dataDir),
        );
        // The first case may succeed or have a window give up: the streams are the same either way.
        if (code === undefined) expect([0, 1]).toContain(r.code);
        else expect(r.code, r.stderr).toBe(code);
        // Debug lines, and the run's own (started, failed or finished), are all on stderr.
        expect(r.stderr).toContain('"level":20');
        expect(r.stderr).toMatch(/"msg":"backfill (started|failed|finished)"/);
        expectOnlyLogs(r.stderr);
        if (json) {
          expect(r.stdout.endsWith('\n')).toBe(true);
          expect((JSON.parse(r.stdout) as RunSummary).kind).toBe('backfill');
        } else {
          expect(r.stdout).toMatch(/^backfill \S+: (succeeded|failed)\n/);
          for (const line of r.stdout.split('\n').slice(1).filter(Boolean)) expect(line).toMatch(/^ {2}[a-z]/);
        }
      }
    } finally {
      fx.emu.setFaults({});
    }
  });
});
