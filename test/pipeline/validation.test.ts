import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { RunFailedError } from '../../src/pipeline/errors.js';
import { runBackfill, type PipelineOptions } from '../../src/pipeline/run.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const NOW = FROM + 3 * D;

const fx = useEmulator({ seed: 21, from: FROM, to: NOW, now: NOW, sessionsPerDay: 60 }, { prefix: 'session-etl-validation-' });
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A fetch that spoils the second record of the first day's answer: `started` becomes a string. */
function spoilingFetch(): { fetch: PipelineOptions['fetch']; badId: () => string | undefined } {
  let badId: string | undefined;
  return {
    badId: () => badId,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      const text = await res.text();
      if (!String(init?.body).includes(`start: ${FROM},`)) return new Response(text, { status: res.status, headers: res.headers });
      const payload = JSON.parse(text) as { data: { sessions: Array<Record<string, unknown>> } };
      const victim = payload.data.sessions[1]!;
      badId = victim.id as string;
      victim.started = String(victim.started);
      return new Response(JSON.stringify(payload), { status: res.status, headers: res.headers });
    },
  };
}

async function opts(extra: Partial<PipelineOptions>): Promise<PipelineOptions> {
  const dataDir = await mkdtemp(join(tmpdir(), 'session-etl-validation-'));
  dirs.push(dataDir);
  return { reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', now: () => NOW * 1000, sleep: async () => {}, ...extra };
}

describe('invalid records on the fast path', () => {
  it('fail: the run fails naming the session id and the field', async () => {
    const spoil = spoilingFetch();
    const err = await runBackfill({ ...(await opts({ fetch: spoil.fetch, concurrency: 1 })), from: FROM, to: FROM + 2 * D }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunFailedError);
    expect((err as Error).message).toContain(`id "${spoil.badId()}"`);
    expect((err as Error).message).toMatch(/field started must be number/);
  });

  it('quarantine: the record goes to rejected_sessions, the rest loads', async () => {
    const spoil = spoilingFetch();
    const o = await opts({ fetch: spoil.fetch, onInvalid: 'quarantine' });
    const s = await runBackfill({ ...o, from: FROM, to: FROM + 2 * D });
    expect(s.outcome).toBe('succeeded');
    expect(s.sessions.rejected).toBe(1);
    const stored = await readDuckDbSessions(o.dataDir);
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, FROM + 2 * D).map((r) => r.id).filter((id) => id !== spoil.badId());
    expect(stored.map((r) => r.session_id)).toEqual(expect.arrayContaining(truth));
    expect(stored.some((r) => r.session_id === spoil.badId())).toBe(false);
    const inst = await DuckDBInstance.create(join(o.dataDir, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
    const c = await inst.connect();
    const rejected = (await c.runAndReadAll('SELECT session_id, field FROM rejected_sessions')).getRowObjectsJS();
    c.closeSync();
    inst.closeSync();
    expect(rejected).toEqual([{ session_id: spoil.badId(), field: 'started' }]);
  });
});
