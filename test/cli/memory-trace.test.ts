/**
 * SESSION_ETL_MEMORY_TRACE (issue 39's debug hook, docs/development.md): a backfill through the real
 * CLI and the emulator, slowed so that it lasts a few seconds, appends one JSON line a second with
 * Node's memory, the kernel's RSS split, DuckDB's pool and memory_limit, and the answers in flight
 * and waiting, and the rows committed and not merged yet.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const TODAY = Math.floor(NOW / D) * D;
const FROM = TODAY - 8 * D;
const END = TODAY - 2 * D;

const fx = useEmulator({ seed: 39, from: FROM, to: TODAY, now: NOW, sessionsPerDay: 50, faults: { latencyMs: 700 } }, { prefix: 'session-etl-memory-trace-' });

describe('SESSION_ETL_MEMORY_TRACE', () => {
  it('samples the run once a second into the file', async () => {
    const dir = await fx.tempDir();
    const trace = join(dir, 'trace.ndjson');
    const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(END), '--concurrency', '1', '--no-progress'], fx.env(join(dir, 'data'), { SESSION_ETL_MEMORY_TRACE: trace }));
    expect(r.code, r.stderr).toBe(0);
    const lines = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const l of lines) {
      for (const k of ['rss', 'heapUsed', 'heapTotal', 'external', 'arrayBuffers', 'duckdbPool', 'requests', 'requestBytes', 'answers', 'answerBytes', 'commits', 'unmergedRows']) expect(typeof l[k], k).toBe('number');
      expect(l.memoryLimit).toMatch(/iB$/);
      if (process.platform === 'linux') expect(l.RssAnon).toBeGreaterThan(0);
    }
    // One request at a time, each answered after 700 ms: most samples see it in flight.
    expect(lines.some((l) => l.requests === 1)).toBe(true);
    expect(lines.at(-1)!.commits).toBeGreaterThan(0);

  }, 60_000);

  it('samples every SESSION_ETL_MEMORY_TRACE_MS milliseconds, each line with its epoch time', async () => {
    const dir = await fx.tempDir();
    const trace = join(dir, 'trace.ndjson');
    const t0 = Date.now();
    const r = await runCli(
      ['backfill', '--from', isoDay(FROM), '--to', isoDay(END), '--concurrency', '1', '--no-progress'],
      fx.env(join(dir, 'data'), { SESSION_ETL_MEMORY_TRACE: trace, SESSION_ETL_MEMORY_TRACE_MS: '100' }),
    );
    expect(r.code, r.stderr).toBe(0);
    const lines = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { t: number });
    for (const l of lines) expect(l.t).toBeGreaterThanOrEqual(t0);
    // Six windows answered after 700 ms each: several seconds, so ten times the lines of one a second.
    const span = lines.at(-1)!.t - lines[0]!.t;
    expect(span).toBeGreaterThan(2_000);
    expect(lines.length).toBeGreaterThan(span / 1000 + 5);
  }, 60_000);

  it('a SESSION_ETL_MEMORY_TRACE_MS that is not a whole number of 10 ms or more is named on stderr, and the trace samples every second', async () => {
    const dir = await fx.tempDir();
    const trace = join(dir, 'trace.ndjson');
    const r = await runCli(
      ['backfill', '--from', isoDay(FROM), '--to', isoDay(END), '--concurrency', '1', '--no-progress'],
      fx.env(join(dir, 'data'), { SESSION_ETL_MEMORY_TRACE: trace, SESSION_ETL_MEMORY_TRACE_MS: '-5' }),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('SESSION_ETL_MEMORY_TRACE_MS="-5" is not a whole number of milliseconds, 10 or more');
    const lines = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { t: number });
    // One a second: never two within 500 ms (at -5 the timer fired every millisecond).
    for (let i = 1; i < lines.length; i++) expect(lines[i]!.t - lines[i - 1]!.t).toBeGreaterThan(500);
  }, 60_000);
});
