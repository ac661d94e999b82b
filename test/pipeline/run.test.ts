import { describe, expect, it } from 'vitest';
import { AccountNotStartedError, runBatch, type AccountJob } from '../../src/pipeline/run.js';
import { useEmulator } from '../helpers/emulator-fixture.js';

const D = 86_400;
const FROM = 1767225600; // 2026-01-01
const TO = FROM + 4 * D;
const NOW = TO + 3 * 3600;

const fx = useEmulator({ seed: 5, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 30 }, { prefix: 'session-etl-run-' });

describe('runBatch: the accounts side by side', () => {
  it.each([1, 2])('at most %i accounts at a time, in order, and none starts after a stop', async (concurrency) => {
    const dataDir = await fx.tempDir();
    const stop = new AbortController();
    const names = ['a', 'b', 'c', 'd'];
    const asked: string[] = [];
    const jobs: AccountJob[] = names.map((account) => ({
      account,
      kind: 'backfill',
      opts: {
        reportingUrl: fx.emu.url,
        apiKey: fx.emu.apiKey,
        dataDir,
        from: FROM,
        to: TO,
        now: () => NOW * 1000,
        sleep: async () => {},
        // The first account's first request stops the command: the accounts started by then finish
        // as interrupted runs; the others are not started.
        fetch: (input, init) => {
          if (!asked.includes(account)) asked.push(account);
          if (account === 'a') stop.abort();
          return fetch(input, init);
        },
      },
    }));
    const results = await runBatch({ dataDir, accounts: 'many', concurrency, stopSignal: stop.signal, sleep: async () => {} }, jobs);
    expect(results.map((r) => r.account)).toEqual(names);
    // 'a' asked, and stopped the command; with 2 side by side 'b' was started with it and may have
    // asked first (the order of their first requests is the event loop's). No later account asked.
    expect(asked).toContain('a');
    expect(asked.filter((n) => !names.slice(0, concurrency).includes(n))).toEqual([]);
    const notStarted = results.filter((r) => r.error instanceof AccountNotStartedError).map((r) => r.account);
    expect(notStarted).toEqual(names.slice(concurrency));
    for (const r of results.slice(0, concurrency)) expect(r.ok || !(r.error instanceof AccountNotStartedError)).toBe(true);
  });
});
