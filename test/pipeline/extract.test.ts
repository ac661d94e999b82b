/**
 * The chunk runner (src/pipeline/extract.ts) against the emulator over real HTTP: a window the
 * server refuses as too large, or one whose answer may have been capped, is split until every
 * record arrives exactly once; a window that cannot be split further fails naming what to do; and
 * after a failure or a stop, the windows not started are handed back as skipped.
 */
import { describe, expect, it } from 'vitest';
import { WindowFailedError } from '../../src/pipeline/errors.js';
import { extractWindows, type ExtractOptions, type ExtractStats } from '../../src/pipeline/extract.js';
import { RateController } from '../../src/pipeline/rate-controller.js';
import { ReportingClient } from '../../src/reporting/client.js';
import type { SessionsBody } from '../../src/reporting/sessions-body.js';
import type { Window } from '../../src/time/windows.js';
import { realSleep } from '../../src/util/sleep.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { D } from '../helpers/time.js';

/** 2026-01-05T00:00Z, a Monday: weekdays hold enough sessions to need splitting. */
const FROM = 1_767_571_200;
const DAYS: Window[] = [0, 1, 2].map((i) => ({ start: FROM + i * D, end: FROM + (i + 1) * D }));

// Half-open windows: a session belongs to exactly one leaf, so "each record once" is exact.
const fx = useEmulator({ seed: 11, from: FROM, to: FROM + 3 * D, now: FROM + 4 * D, sessionsPerDay: 60, windowRule: 'half-open' }, { prefix: 'session-etl-extract-' });

const ids = (body: SessionsBody): string[] =>
  body.kind === 'ndjson' ? body.ndjson.toString().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { id: string }).id) : body.records.map((r) => (r as { id: string }).id);

/** Runs the chunk runner one window at a time; returns what it handed over, in order, and what it logged. */
async function extract(o: Partial<ExtractOptions> & { windows: readonly Window[]; minChunkSeconds: number }) {
  const stats: ExtractStats = { requests: 0, retries: 0, rateLimited: 0, bisections: 0, windowsDone: 0 };
  const leaves: Array<{ window: Window; ids: string[] }> = [];
  const logs: Array<{ event: string; fields: Record<string, unknown> }> = [];
  const outcome = await extractWindows({
    client: new ReportingClient({ url: fx.emu.url, apiKey: fx.emu.apiKey, sleep: async () => {} }),
    controller: new RateController({ maxConcurrency: 1, now: Date.now, sleep: realSleep }),
    maxConcurrency: 1,
    now: Date.now,
    stats,
    onWindow: async (window, body) => void leaves.push({ window, ids: ids(body) }),
    onLog: (event, fields) => logs.push({ event, fields }),
    ...o,
  });
  return { outcome, stats, leaves, logs };
}

const truth = (w: Window) => fx.emu.dataset.sessionsStartedIn(w.start, w.end).map((s) => s.id);

describe('extractWindows', () => {
  it('a window the server refuses as too large is split in halves, oldest first, until each answer fits: every record once, each split counted and logged', async () => {
    fx.emu.setFaults({ maxResults: 12 });
    const window = DAYS[0]!;
    expect(truth(window).length).toBeGreaterThan(12);
    const r = await extract({ windows: [window], minChunkSeconds: 60 });
    fx.emu.setFaults({});
    expect(r.outcome).toEqual({ skipped: [] });
    // The leaves tile the window in order.
    expect(r.leaves[0]!.window.start).toBe(window.start);
    expect(r.leaves.at(-1)!.window.end).toBe(window.end);
    r.leaves.slice(1).forEach((l, i) => expect(l.window.start).toBe(r.leaves[i]!.window.end));
    for (const l of r.leaves) expect(l.ids.length).toBeLessThanOrEqual(12);
    expect(r.leaves.flatMap((l) => l.ids)).toEqual(truth(window));
    expect(r.stats.bisections).toBe(r.leaves.length - 1);
    expect(r.logs.filter((l) => l.event === 'bisect')).toHaveLength(r.stats.bisections);
    expect(r.logs.find((l) => l.event === 'bisect')!.fields.reason).toMatch(/maximum result size of 12/);
    expect(r.stats.windowsDone).toBe(1);
  });

  it('an answer holding maxResultsPerQuery records may have been capped in silence: it is split too, and no record is lost', async () => {
    fx.emu.setFaults({ truncateResultsTo: 10 });
    const window = DAYS[1]!;
    expect(truth(window).length).toBeGreaterThan(10);
    const r = await extract({ windows: [window], minChunkSeconds: 60, maxResultsPerQuery: 10 });
    fx.emu.setFaults({});
    expect(r.outcome).toEqual({ skipped: [] });
    expect(r.leaves.flatMap((l) => l.ids)).toEqual(truth(window));
    expect(r.logs.find((l) => l.event === 'bisect')!.fields.reason).toBe('the answer held 10 records, at least --max-results-per-query (10), so it may be capped');
  });

  it('a window that cannot be split below the minimum chunk fails, naming the window and what to do; the windows after it are skipped', async () => {
    fx.emu.setFaults({ maxResults: 1 });
    const r = await extract({ windows: DAYS, minChunkSeconds: D / 2 });
    fx.emu.setFaults({});
    expect(r.outcome.error).toBeInstanceOf(WindowFailedError);
    expect(r.outcome.error!.message).toContain('2026-01-05T00:00:00Z');
    expect(r.outcome.error!.message).toContain('it cannot be split below the minimum chunk (43200 s)');
    expect(r.outcome.error!.message).toContain('Lower --min-chunk, or raise --max-results-per-query if the server allows more');
    expect(r.outcome.skipped).toEqual(DAYS);
    expect(r.leaves).toEqual([]);
    expect(r.stats.windowsDone).toBe(0);
  });

  it('a stop lets the running window finish and hand its records over; the windows not started are returned as skipped', async () => {
    const stop = new AbortController();
    const leaves: Window[] = [];
    const r = await extract({
      windows: DAYS,
      minChunkSeconds: 60,
      stopSignal: stop.signal,
      onWindow: async (w) => {
        leaves.push(w);
        stop.abort();
      },
    });
    expect(leaves).toEqual([DAYS[0]]);
    expect(r.outcome).toEqual({ skipped: [DAYS[1], DAYS[2]] });
    expect(r.stats.windowsDone).toBe(1);
  });
});
