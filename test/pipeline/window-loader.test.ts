/**
 * The load stage for one window (src/pipeline/window-loader.ts) against a real store in a temporary
 * data directory: a body the scanner read whole is stored as it came; any other shape is checked
 * record by record, an invalid record quarantined or failing the window as the policy says; and
 * the run's counts and its "committed" signal follow what was stored.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { RunTally } from '../../src/pipeline/run-tally.js';
import { WindowLoader } from '../../src/pipeline/window-loader.js';
import { readSessionsBody, type SessionsBody } from '../../src/reporting/sessions-body.js';
import type { SessionRecord } from '../../src/schema/session-fields.js';
import { SessionStore } from '../../src/store/session-store.js';
import type { InvalidPolicy } from '../../src/pipeline/flatten.js';
import { captureLogger } from '../helpers/capture.js';
import { expectedRow, readDuckDbSessions } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

/** 2026-01-01T00:00Z. */
const DAY = 1_767_225_600;
const WINDOW = { start: DAY, end: DAY + D };
/** When the window's answer came (ms): each row's extracted_at, in seconds. */
const FETCHED_MS = (DAY + D + 3_600) * 1000;

const rec = (id: string, started: number, extra: Record<string, unknown> = {}) => ({
  id, companyId: '7', pin: '0042', started, ended: started + 300, duration: 300, sessionType: 'chat', recording: true,
  recordingUrl: null, agent: { id: '1', name: 'Ann', email: 'ann@example.com' }, agentGroupId: 12, agentIp: null, customerIp: '::1',
  externalFields: null, ...extra,
});
const answer = (records: unknown[]): SessionsBody => readSessionsBody(Buffer.from(JSON.stringify({ data: { sessions: records } })), 'test');

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A new DuckDB store and a loader for it; `finish()` closes the store and reads what it holds. */
async function setUp(policy: InvalidPolicy) {
  const dataDir = await mkdtemp(join(tmpdir(), 'session-etl-window-loader-'));
  dirs.push(dataDir);
  const store = await SessionStore.open({ dataDir, format: 'duckdb' });
  const tally = new RunTally('run-1', 'backfill', Date.now(), '');
  const logger = captureLogger();
  let commits = 0;
  const loader = new WindowLoader(store, '', 'run-1', policy, tally, logger, () => commits++);
  return {
    loader,
    tally,
    logger,
    commits: () => commits,
    async finish() {
      await store.flush();
      await store.close();
      const inst = await DuckDBInstance.create(join(dataDir, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
      const c = await inst.connect();
      const rejected = (await c.runAndReadAll('SELECT session_id, field, reason, epoch(window_start)::BIGINT AS window_start, run_id FROM rejected_sessions ORDER BY session_id')).getRowObjectsJS();
      const coverage = (await c.runAndReadAll('SELECT start_s, end_s FROM _coverage')).getRowObjectsJS();
      c.closeSync();
      inst.closeSync();
      return { sessions: await readDuckDbSessions(dataDir), rejected, coverage: coverage.map((r) => [Number(r.start_s), Number(r.end_s)]) };
    },
  };
}

describe('WindowLoader', () => {
  it('a body the scanner read whole is stored as it came: every record, extracted when fetched, counted, the run told once', async () => {
    const records = [rec('s1', DAY + 60), rec('s2', DAY + 7_200, { externalFields: { customerName: 'Zoë, "Z"', externalCaseId: 'C-1', notes: 'a\nb', accountingInfo: null, customerDeviceType: null, customerOs: null } })];
    const body = answer(records);
    expect(body.kind).toBe('ndjson');
    const t = await setUp('quarantine');
    await t.loader.load(WINDOW, body, FETCHED_MS);
    expect(t.commits()).toBe(1);
    expect(t.tally.totals).toMatchObject({ fetched: 2, rejected: 0, duplicatesDropped: 0 });
    const got = await t.finish();
    expect(got.sessions).toEqual(records.map((r) => ({ ...expectedRow(r as SessionRecord), extracted_at: FETCHED_MS / 1000 })));
    expect(got.rejected).toEqual([]);
    expect(got.coverage).toEqual([[WINDOW.start, WINDOW.end]]);
  });

  it('another shape is checked record by record: an invalid record quarantined (counted, logged with the window), an exact duplicate dropped, the rest stored', async () => {
    // The duplicate and the string where an integer belongs both take the body off the fast path.
    const records = [rec('s1', DAY + 60), rec('s1', DAY + 60), rec('bad', DAY + 120, { duration: 'long' }), rec('s3', DAY + 180)];
    const body = answer(records);
    expect(body.kind).toBe('records');
    const t = await setUp('quarantine');
    await t.loader.load(WINDOW, body, FETCHED_MS);
    expect(t.commits()).toBe(1);
    expect(t.tally.totals).toMatchObject({ fetched: 2, rejected: 1, duplicatesDropped: 1 });
    const warned = t.logger.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 'warn');
    expect(warned).toEqual([{ level: 'warn', window: '2026-01-01T00:00:00Z–2026-01-02T00:00:00Z', rejected: 1, msg: 'records quarantined in rejected_sessions' }]);
    const got = await t.finish();
    expect(got.sessions.map((r) => r.session_id)).toEqual(['s1', 's3']);
    expect(got.sessions[0]).toEqual({ ...expectedRow(records[0] as SessionRecord), extracted_at: FETCHED_MS / 1000 });
    expect(got.rejected).toEqual([{ session_id: 'bad', field: 'duration', reason: expect.stringContaining('bad') as unknown, window_start: BigInt(DAY), run_id: 'run-1' }]);
    expect(got.coverage).toEqual([[WINDOW.start, WINDOW.end]]);
  });

  it('with the fail policy an invalid record fails the window, naming the session and the field: nothing of it stored, covered or counted', async () => {
    const body = answer([rec('s1', DAY + 60), rec('bad', DAY + 120, { duration: 'long' })]);
    const t = await setUp('fail');
    await expect(t.loader.load(WINDOW, body, FETCHED_MS)).rejects.toThrow(/bad.*duration|duration.*bad/);
    expect(t.commits()).toBe(0);
    expect(t.tally.totals).toMatchObject({ fetched: 0, rejected: 0 });
    const got = await t.finish();
    expect(got.sessions).toEqual([]);
    expect(got.coverage).toEqual([]);
  });
});
