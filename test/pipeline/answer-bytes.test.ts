/**
 * The answers a run holds are bounded in bytes by the memory budget's share (issue 39): with the
 * commits held back (a job on the store's write queue, which every commit waits behind) and long-text
 * answers of about 3 MiB, the answers read and not yet committed never go beyond the share; before,
 * the window count alone (8 at the smallest budget) let them reach twice it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIN_BUDGET, MiB, splitBudget } from '../../src/config/memory-budget.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/reporting/defaults.js';
import { runBatch } from '../../src/pipeline/run.js';
import type { PipelineOptions } from '../../src/pipeline/options.js';
import type { SessionStore } from '../../src/store/session-store.js';
import { SINGLE_ACCOUNT } from '../../src/store/shape.js';
import { silentLogger } from '../../src/util/logger.js';
import { readDuckDbSessions } from '../helpers/read-store.js';

const D = 86_400;
const FROM = 1767571200; // 2026-01-05, a Monday
const DAYS = 12; // Monday to the next Friday: ten weekdays of about 3 MB, a small weekend
const TO = FROM + DAYS * D;
const NOW = TO + 7 * D;

let emu: Emulator;
const dirs: string[] = [];
beforeAll(async () => {
  emu = await startEmulator({ seed: 39, from: FROM, to: TO, now: NOW, sessionsPerDay: 1_500, longNotes: true });
});
afterAll(async () => {
  await emu.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('answers waiting for their commit', () => {
  it('hold at most the budget\'s share in bytes while the commits are held back, and the run completes exact', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'session-etl-answer-bytes-'));
    dirs.push(dataDir);
    const budget = { value: `${MIN_BUDGET / MiB}MiB`, name: '--memory-limit' };
    const split = splitBudget({ bytes: MIN_BUDGET, source: 'setting', from: budget.name }, { concurrency: 4, maxBodyBytes: DEFAULT_MAX_BODY_BYTES });
    const share = split.answerBytes;
    // The data is what the case is about: weekday answers of about 3 MiB, below the largest body.
    const sizes: number[] = [];

    let store: SessionStore | undefined;
    let open = true;
    let releaseHold!: () => void;
    const released = new Promise<void>((resolve) => (releaseHold = resolve));
    const release = () => {
      open = false;
      releaseHold();
    };
    let holding: Promise<unknown> | undefined;
    let held = 0;
    let mostHeld = 0;
    let answersHeld = 0;
    let mostAnswers = 0;
    let waited = false;
    const logger = {
      ...silentLogger,
      debug: (_obj: object, msg?: string) => {
        // The run says the next request waits for a commit: what it holds is as far as it goes.
        if (msg?.includes('the next request waits for a commit')) {
          waited = true;
          release();
        }
      },
    };
    const fetchCounting: typeof fetch = async (input, init) => {
      // The commits wait behind this job until the fetch has gone as far as the run lets it.
      holding ??= store!.withWriteConnection(() => released);
      // Requests started while the commits are held back: their answers are all held at once.
      const counted = open;
      const res = await fetch(input, init);
      const bytes = Buffer.from(await res.arrayBuffer());
      if (String(init?.body).includes('sessions(')) sizes.push(bytes.length);
      if (counted && String(init?.body).includes('sessions(')) {
        held += bytes.length;
        answersHeld++;
        mostHeld = Math.max(mostHeld, held);
        mostAnswers = Math.max(mostAnswers, answersHeld);
        // Beyond the share: the bound failed; let the run go on to its end all the same.
        if (held > share) release();
      }
      return new Response(bytes, { status: res.status, headers: res.headers });
    };
    const opts: PipelineOptions & { from: number; to: number } = {
      reportingUrl: emu.url,
      apiKey: emu.apiKey,
      dataDir,
      format: 'duckdb',
      now: () => NOW * 1000,
      sleep: async () => {},
      concurrency: 4,
      chunkSeconds: D,
      fetch: fetchCounting,
      logger,
      memoryLimit: budget,
      from: FROM,
      to: TO,
    };
    const [r] = await runBatch(
      {
        accounts: 'single',
        concurrency: 1,
        dataDir,
        format: 'duckdb',
        now: opts.now,
        sleep: opts.sleep,
        logger,
        memoryLimit: budget,
        prepare: async (s) => void (store = s),
      },
      [{ account: SINGLE_ACCOUNT, kind: 'backfill', opts }],
    );
    await holding;
    expect(r!.ok, String(r!.error)).toBe(true);

    const weekdays = sizes.filter((b) => b > MiB);
    expect(weekdays.length).toBe(10);
    expect(Math.max(...sizes)).toBeLessThan(split.maxBodyBytes);
    // As many windows as the count bound lets wait would hold more than the share.
    expect(split.commitSlots * Math.min(...weekdays)).toBeGreaterThan(share);
    // The bound: at most the share held, and it was reached (the run waited, several answers held at once).
    expect(mostHeld).toBeLessThanOrEqual(share);
    expect(waited).toBe(true);
    expect(mostAnswers).toBeGreaterThanOrEqual(3);
    // Every session stored once.
    const truth = emu.dataset.sessionsStartedIn(FROM, TO);
    const table = await readDuckDbSessions(dataDir);
    expect(table.length).toBe(truth.length);
    expect(new Set(table.map((x) => x.session_id)).size).toBe(truth.length);
  }, 120_000);
});
