/**
 * Long free text (issue 19): case notes of 1–2 KB with quotes, backslashes, newlines, tabs, control
 * characters, non-ASCII and emoji go through the fast path into DuckDB and Parquet byte for byte;
 * a note holding a lone UTF-16 surrogate (valid JSON, no UTF-8 form) is an invalid record, named.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/emulator/index.js';
import { RunFailedError } from '../../src/pipeline/errors.js';
import { runBackfill, type PipelineOptions } from '../../src/pipeline/run.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const NOW = FROM + 4 * D;

const clean = useEmulator({ seed: 19, from: FROM, to: NOW, now: NOW, sessionsPerDay: 150, longNotes: true }, { prefix: 'session-etl-long-text-' });
const lone = useEmulator({ seed: 19, from: FROM, to: NOW, now: NOW, sessionsPerDay: 150, longNotes: { loneSurrogateRate: 0.05 } }, { prefix: 'session-etl-long-text-' });
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function opts(emu: Emulator, extra: Partial<PipelineOptions> = {}): Promise<PipelineOptions> {
  const dataDir = await mkdtemp(join(tmpdir(), 'session-etl-long-text-'));
  dirs.push(dataDir);
  return { reportingUrl: emu.url, apiKey: emu.apiKey, dataDir, format: 'both', now: () => NOW * 1000, sleep: async () => {}, ...extra };
}

/** id → notes of every session the emulator serves for the range (its own ground truth). */
function truth(emu: Emulator): Map<string, string | null> {
  return new Map(emu.dataset.sessionsStartedIn(FROM, NOW).map((r) => [r.id, r.externalFields?.notes ?? null]));
}

/** id → notes as stored in the DuckDB table and, read with hyparquet, in the Parquet dataset. */
async function stored(dataDir: string): Promise<{ table: Map<string, unknown>; parquet: Map<string, unknown> }> {
  const table = new Map((await readDuckDbSessions(dataDir)).map((r) => [r.session_id, r.external_notes]));
  const parquet = new Map((await readParquetDataset(dataDir)).flatMap((p) => p.rows).map((r) => [r.session_id as string, r.external_notes]));
  return { table, parquet };
}

describe('long notes', () => {
  it('every note of 1–2 KB (escapes, control characters, emoji) round-trips exactly into DuckDB and Parquet', async () => {
    const expected = truth(clean.emu);
    const notes = [...expected.values()].filter((n): n is string => typeof n === 'string');
    // The data is what the case is about: long, and holding every awkward kind of character.
    expect(notes.length).toBeGreaterThan(200);
    expect(Math.min(...notes.map((n) => Buffer.byteLength(n)))).toBeGreaterThanOrEqual(1_024);
    const all = notes.join('');
    for (const ch of ['"', '\\', '\n', '\t', '\r', '\u0000', '\u0007', '\u001b', '\u2028', '😀', '👨\u200d👩\u200d👧', 'é', '顧']) expect(all).toContain(ch);

    const o = await opts(clean.emu);
    const s = await runBackfill({ ...o, from: FROM, to: NOW });
    expect(s.outcome).toBe('succeeded');
    const got = await stored(o.dataDir);
    expect(got.table.size).toBe(expected.size);
    expect(got.parquet.size).toBe(expected.size);
    const wrong = [...expected].filter(([id, n]) => got.table.get(id) !== n || got.parquet.get(id) !== n).map(([id]) => id);
    expect(wrong).toEqual([]);
  });

  it('a note with a lone surrogate fails the run, naming the session and the field', async () => {
    const bad = [...truth(lone.emu)].filter(([, n]) => typeof n === 'string' && !(n as unknown as { isWellFormed(): boolean }).isWellFormed()).map(([id]) => id);
    expect(bad.length).toBeGreaterThan(0);
    const o = await opts(lone.emu, { concurrency: 1 });
    const err = await runBackfill({ ...o, from: FROM, to: NOW }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunFailedError);
    const message = (err as Error).message;
    expect(bad.some((id) => message.includes(`id "${id}"`))).toBe(true);
    expect(message).toMatch(/field externalFields\.notes holds a lone UTF-16 surrogate/);
  });

  it('quarantine: notes with a lone surrogate go to rejected_sessions, every other note round-trips exactly', async () => {
    const expected = truth(lone.emu);
    const bad = new Set([...expected].filter(([, n]) => typeof n === 'string' && !(n as unknown as { isWellFormed(): boolean }).isWellFormed()).map(([id]) => id));
    const o = await opts(lone.emu, { onInvalid: 'quarantine' });
    const s = await runBackfill({ ...o, from: FROM, to: NOW });
    expect(s.outcome).toBe('succeeded');
    expect(s.sessions.rejected).toBe(bad.size);
    const got = await stored(o.dataDir);
    const kept = [...expected].filter(([id]) => !bad.has(id));
    expect(got.table.size).toBe(kept.length);
    expect(got.parquet.size).toBe(kept.length);
    const wrong = kept.filter(([id, n]) => got.table.get(id) !== n || got.parquet.get(id) !== n).map(([id]) => id);
    expect(wrong).toEqual([]);
    const inst = await DuckDBInstance.create(join(o.dataDir, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
    const c = await inst.connect();
    const rejected = (await c.runAndReadAll('SELECT session_id, field, raw FROM rejected_sessions ORDER BY session_id')).getRowObjectsJS();
    c.closeSync();
    inst.closeSync();
    expect(rejected.map((r) => r.session_id)).toEqual([...bad].sort());
    expect(new Set(rejected.map((r) => r.field))).toEqual(new Set(['externalFields.notes']));
    // The raw record is kept as JSON, the lone half escaped (\ud83d), so nothing of it is lost.
    for (const r of rejected) expect(JSON.parse(String(r.raw)).externalFields.notes).toBe(expected.get(String(r.session_id)));
  });
});
