import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { emulatorOptionsFromFlags, runEmulator, type EmulatorFlags } from '../../src/cli/commands/emulator.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';

const DEFAULTS: EmulatorFlags = { host: '127.0.0.1', port: '0', seed: '1', sessionsPerDay: '200', windowRule: 'closed', argTypes: 'Int!' };

describe('emulator flags', () => {
  it('builds the options from the flags', () => {
    expect(
      emulatorOptionsFromFlags({
        ...DEFAULTS, port: '8080', seed: '-3', from: '2026-01-01', to: '1767830400', now: '2026-01-05T12:00:00Z',
        windowRule: 'overlap', argTypes: 'String!', apiKey: 'abc', latencyMs: '25', rateLimitRps: '0.5',
        serverErrorRate: '0.1', resetRate: '0', truncateRate: '1', partialErrorRate: '0.25', maxResults: '1000',
        maxSpanSeconds: '86400', truncateResultsTo: '0',
      }),
    ).toEqual({
      host: '127.0.0.1', port: 8080, seed: -3, sessionsPerDay: 200, windowRule: 'overlap', argTypes: 'String!', apiKey: 'abc',
      from: 1767225600, to: 1767830400, now: 1767614400,
      faults: {
        latencyMs: 25, rateLimitRps: 0.5, serverErrorRate: 0.1, resetRate: 0, truncateRate: 1, partialErrorRate: 0.25,
        maxResults: 1000, maxSpanSeconds: 86400, truncateResultsTo: 0,
      },
    });
    expect(emulatorOptionsFromFlags(DEFAULTS).faults).toBeUndefined();
    expect(
      emulatorOptionsFromFlags({
        ...DEFAULTS, faultRate: '0.04', faultKinds: 'rateLimited', rateLimitRps: '10', rateLimitSchedule: '0:10,30:4,60:10',
        sharedQuotaSchedule: '0:0,30:3', concurrencyLimit: '2', rateLimitHeaders: 'ietf', retryAfterFormat: 'http-date',
      }).faults,
    ).toEqual({
      rateLimitRps: 10, faultRate: 0.04, faultKinds: ['rateLimited'],
      rateLimitSchedule: [{ atSeconds: 0, rps: 10 }, { atSeconds: 30, rps: 4 }, { atSeconds: 60, rps: 10 }],
      sharedQuotaSchedule: [{ atSeconds: 0, rps: 0 }, { atSeconds: 30, rps: 3 }],
      concurrencyLimit: 2, rateLimitHeaders: 'ietf', retryAfterFormat: 'http-date',
    });
  });

  it.each([
    [{ port: '70000' }, '--port'],
    [{ port: 'http' }, '--port'],
    [{ seed: '1.5' }, '--seed'],
    [{ sessionsPerDay: '-1' }, '--sessions-per-day'],
    [{ from: 'yesterday' }, '--from'],
    [{ to: '2026-01-01T08:00:00' }, '--to'],
    [{ now: '2026-02-30' }, '--now'],
    [{ from: '2026-02-01', to: '2026-01-01' }, '--to'],
    [{ windowRule: 'open' }, '--window-rule'],
    [{ argTypes: 'Float' }, '--arg-types'],
    [{ apiKey: ' ' }, '--api-key'],
    [{ latencyMs: '-5' }, '--latency-ms'],
    [{ rateLimitRps: '0' }, '--rate-limit-rps'],
    [{ serverErrorRate: '1.5' }, '--server-error-rate'],
    [{ resetRate: 'often' }, '--reset-rate'],
    [{ truncateRate: '' }, '--truncate-rate'],
    [{ partialErrorRate: '-0.1' }, '--partial-error-rate'],
    [{ maxResults: '10.5' }, '--max-results'],
    [{ maxSpanSeconds: '1d' }, '--max-span-seconds'],
    [{ truncateResultsTo: '-1' }, '--truncate-results-to'],
    [{ faultRate: '2' }, '--fault-rate'],
    [{ faultKinds: 'rateLimited,meteor' }, '--fault-kinds'],
    [{ rateLimitSchedule: '0:10,30' }, '--rate-limit-schedule'],
    [{ rateLimitSchedule: '0:10,30:0' }, '--rate-limit-schedule'],
    [{ rateLimitSchedule: '30:10,0:4' }, '--rate-limit-schedule'],
    [{ sharedQuotaSchedule: '0:3' }, '--shared-quota-schedule'],
    [{ concurrencyLimit: '0' }, '--concurrency-limit'],
    [{ rateLimitHeaders: 'draft' }, '--rate-limit-headers'],
    [{ retryAfterFormat: 'date' }, '--retry-after-format'],
  ] as Array<[Partial<EmulatorFlags>, string]>)('refuses %o with a usage error naming %s', (bad, flag) => {
    let error: unknown;
    try {
      emulatorOptionsFromFlags({ ...DEFAULTS, ...bad });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain(flag);
  });
});

describe('emulator command', () => {
  it('prints exactly one line with the URL and key, serves, and closes when told to stop', async () => {
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', (d: Buffer) => (out += d.toString()));
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const run = runEmulator({ ...DEFAULTS, apiKey: 'cli-key', now: '2026-01-15T14:00:00Z' }, { stdout, stderr: new PassThrough(), until: () => stopped });
    await waitFor(() => out.includes('\n'), 5_000, 'the line');
    const m = /^reporting endpoint: (http:\/\/127\.0\.0\.1:\d+\/) {2}api key: cli-key\n$/.exec(out);
    expect(m).not.toBeNull();
    const res = await fetch(m![1]!, { method: 'POST', headers: { authorization: 'cli-key' }, body: JSON.stringify({ query: '{ sessions(start: 1768435200, end: 1768485600) { id } }' }) });
    expect(res.status).toBe(200);
    stop();
    await run;
    await expect(fetch(m![1]!, { method: 'POST' })).rejects.toThrow();
  });

  const built = existsSync(fileURLToPath(new URL('../../dist/src/cli/commands/emulator.js', import.meta.url)));
  it.skipIf(!built)('the built CLI runs until SIGTERM and exits 0; a bad flag exits 2', async () => {
    const child = startCli(['emulator', '--seed', '3']);
    await waitFor(() => child.output().includes('api key:'), 20_000, 'the emulator line');
    expect(child.output()).toMatch(/^reporting endpoint: http:\/\/127\.0\.0\.1:\d+\/ {2}api key: emulator-reporting-key\n$/);
    child.kill('SIGTERM');
    expect((await child.result).code).toBe(0);
    const bad = startCli(['emulator', '--reset-rate', '2']);
    const r = await bad.result;
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--reset-rate/);
  });
});

describe('emulator flags a person can act on (issue 38)', () => {
  it('--seed abc says what was given and that an integer is expected', () => {
    expect(() => emulatorOptionsFromFlags({ ...DEFAULTS, seed: 'abc' })).toThrow('--seed must be an integer (a whole number such as 1 or 42); got "abc"');
  });

  const built = existsSync(fileURLToPath(new URL('../../dist/src/cli/commands/emulator.js', import.meta.url)));
  it.skipIf(!built)('a port in use exits 2 naming the port and --port, with what to do', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const r = await runCli(['emulator', '--port', String(port)]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`error: port ${port} is in use (--port): choose another or 0 (any free port)`);
      expect(r.stderr).not.toContain('EADDRINUSE');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
