/**
 * Bench case "long text" (issue 19): the year's backfill again, every note 1–2 KB of pasted case
 * text (quotes, backslashes, newlines, tabs, control characters, non-ASCII, emoji: the emulator's
 * `longNotes`). (a) the backfill as a real process against (b) DuckDB alone converting the same
 * records from one NDJSON file, the peak RSS of (a), and a check that every byte of every note
 * reached the DuckDB table and the Parquet dataset: per day, an MD5 over every session's id and
 * note (sorted by id) as the emulator's own generator writes them, against the same MD5 computed by
 * DuckDB over what the table holds and over what the Parquet files hold. Not a sample.
 */
import { createHash } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { generateDay } from '../src/emulator/generate-day.js';
import { SessionIdCodec } from '../src/emulator/session-ids.js';
import { readSessionsBody } from '../src/reporting/sessions-body.js';
import type { Row } from './measured-process.js';

interface Emu {
  close(): Promise<void>;
}
interface CliRun {
  wallMs: number;
  maxRssBytes: number;
  cpuMs: number;
  summary: { sessions: { new: number | null } };
}

/** What bench/run.ts lends the case. */
export interface LongTextBench<E extends Emu> {
  work: string;
  sessions: number;
  from: number;
  days: number;
  emulatorOptions(sessions: number, extra: Record<string, unknown>): Record<string, unknown>;
  startEmulatorProcess(options: Record<string, unknown>): Promise<E>;
  fetchAll(emu: E, concurrency: number, each?: (day: number, body: Buffer) => void): Promise<{ ms: number; bytes: number }>;
  cli(args: string[], emu: E): Promise<CliRun>;
  backfillArgs(dataDir: string): string[];
  nativeConvert(ndjson: string, dir: string): Promise<{ loadMs: number; parquetMs: number; totalMs: number }>;
  row(r: Row): void;
  fmt(n: number, digits?: number): string;
  secs(ms: number): string;
  mb(bytes: number): string;
}

const D = 86_400;
const sql = (s: string) => `'${s.replace(/'/g, "''")}'`;

export async function longTextCase<E extends Emu>(b: LongTextBench<E>): Promise<void> {
  const section = '1L long text';
  const options = b.emulatorOptions(b.sessions, { longNotes: true });
  const emu = await b.startEmulatorProcess(options);
  const dirA = join(b.work, 'long-a');
  const dirB = join(b.work, 'long-b');
  const ndjson = join(b.work, 'long.ndjson');
  try {
    const warm = await b.fetchAll(emu, 4);
    const a = await b.cli(b.backfillArgs(dirA), emu);
    const stored = a.summary.sessions.new ?? 0;

    // (b): the same records as one NDJSON file (the scanner makes it, timed: its cost on escapes).
    const out = await open(ndjson, 'w');
    let scanMs = 0;
    let records = 0;
    const parts: Buffer[] = [];
    await b.fetchAll(emu, 4, (d, body) => {
      const t = performance.now();
      const r = readSessionsBody(body, `day ${d}`);
      scanMs += performance.now() - t;
      if (r.kind !== 'ndjson') throw new Error('a long-text body left the fast path');
      records += r.count;
      parts[d] = r.ndjson;
    });
    for (const p of parts) if (p && p.length) await out.write(Buffer.concat([p, Buffer.from('\n')]));
    await out.close();
    parts.length = 0;
    const cpuBefore = process.cpuUsage();
    const nb = await b.nativeConvert(ndjson, dirB);
    const cpu = process.cpuUsage(cpuBefore);
    const bCpuMs = (cpu.user + cpu.system) / 1000;
    await rm(ndjson, { force: true });
    await rm(dirB, { recursive: true, force: true });

    const ratio = nb.totalMs / a.wallMs;
    b.row({ section, measure: `(a) backfill ${b.fmt(stored)} sessions with notes of 1–2 KB (${b.mb(warm.bytes)} of JSON) → DuckDB + Parquet`, value: `${b.secs(a.wallMs)}, ${b.fmt((stored / a.wallMs) * 1000)} sessions/s` });
    b.row({ section, measure: '(b) native: NDJSON → read_json → table → Parquet, DuckDB alone', value: `${b.secs(nb.totalMs)} (load ${b.secs(nb.loadMs)}, Parquet ${b.secs(nb.parquetMs)})` });
    b.row({ section, measure: '(a)/(b)', value: b.fmt(ratio, 2), goal: '≥ 0.80', met: ratio >= 0.8 });
    b.row({
      section,
      measure: 'CPU time (user + system, all threads): (a) / (b)',
      value: `${b.fmt(a.cpuMs / 1000, 1)} / ${b.fmt(bCpuMs / 1000, 1)} core-seconds; (a)/(b) ≤ ${b.fmt(nb.totalMs / (a.cpuMs / availableParallelism()), 2)} at full use of every core`,
    });
    b.row({ section, measure: `body scanner on these bodies (JS), ${b.fmt(records)} records`, value: `${b.secs(scanMs)}, ${b.fmt(warm.bytes / 2 ** 20 / (scanMs / 1000))} MiB/s` });
    b.row({ section, measure: `peak RSS, backfill of ${b.fmt(stored)} sessions with long notes`, value: b.mb(a.maxRssBytes), goal: '≤ 300 MB', met: a.maxRssBytes <= 300e6 });

    // Every note, every byte: the generator's per-day digests against the table's and the Parquet files'.
    const expected = expectedDigests(options, b.from, b.days);
    const table = await storedDigests(`${sql(join(dirA, 'sessions.duckdb'))}`, 'table');
    const parquet = await storedDigests(sql(join(dirA, 'parquet', 'sessions', '**', '*.parquet')), 'parquet');
    const badTable = [...expected.digests].filter(([d, h]) => table.get(d) !== h).map(([d]) => d);
    const badParquet = [...expected.digests].filter(([d, h]) => parquet.get(d) !== h).map(([d]) => d);
    const extra = [...table.keys(), ...parquet.keys()].filter((d) => !expected.digests.has(d));
    const exact = badTable.length === 0 && badParquet.length === 0 && extra.length === 0;
    b.row({
      section,
      measure: `every note round-trips: MD5 per day of (id, byte length, note) sorted by id, generator vs table vs Parquet`,
      value: `${expected.digests.size} days, ${b.fmt(expected.notes)} notes, ${b.mb(expected.bytes)} of note text: ${
        exact ? 'all equal' : `DIFFER on ${badTable.length} days in the table, ${badParquet.length} in Parquet, ${extra.length} unexpected days (${[...badTable, ...badParquet, ...extra].slice(0, 3).join(', ')})`
      }`,
      met: exact,
    });
  } finally {
    await emu.close();
    await rm(dirA, { recursive: true, force: true });
  }
}

/** The line each session contributes to its day's digest: id, the note's UTF-8 length (-1 for null), the note. */
const line = (id: string, notes: string | null) => `${id}\t${notes === null ? -1 : Buffer.byteLength(notes, 'utf8')}\t${notes ?? ''}`;

/** Per day (YYYY-MM-DD), the MD5 of its sessions' lines joined by '\n', from the emulator's generator itself. */
function expectedDigests(options: Record<string, unknown>, from: number, days: number): { digests: Map<string, string>; notes: number; bytes: number } {
  const seed = options.seed as number;
  const ids = new SessionIdCodec(seed);
  const digests = new Map<string, string>();
  let notes = 0;
  let bytes = 0;
  // The window that ends the range includes its end (the emulator's 'closed' rule): the jobs
  // scheduled at midnight of the day after the range are part of the backfill too.
  for (let k = 0; k <= days; k++) {
    const day = from / D + k;
    const gen = generateDay({ seed, sessionsPerDay: options.sessionsPerDay as number, ids, longNotes: {} }, day);
    let records = JSON.parse(`[${gen.text.toString('utf8')}]`) as Array<{ id: string; started: number; externalFields: { notes: string | null } | null }>;
    if (k === days) records = records.filter((r) => r.started === day * D);
    if (records.length === 0) continue;
    const lines = records.map((r) => {
      const n = r.externalFields?.notes ?? null;
      if (n !== null) {
        notes++;
        bytes += Buffer.byteLength(n, 'utf8');
      }
      return { id: r.id, text: line(r.id, n) };
    });
    lines.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    const date = new Date(day * D * 1000).toISOString().slice(0, 10);
    digests.set(date, createHash('md5').update(lines.map((l) => l.text).join('\n'), 'utf8').digest('hex'));
  }
  return { digests, notes, bytes };
}

/** The same digests computed by DuckDB over the stored table or the Parquet files. */
async function storedDigests(source: string, kind: 'table' | 'parquet'): Promise<Map<string, string>> {
  const inst = await DuckDBInstance.create(':memory:');
  const c = await inst.connect();
  try {
    await c.run("SET TimeZone = 'UTC'");
    let from: string;
    if (kind === 'table') {
      await c.run(`ATTACH ${source} AS s (READ_ONLY)`);
      from = 's.sessions';
    } else from = `read_parquet(${source}, hive_partitioning = false)`;
    const rows = (
      await c.runAndReadAll(
        `SELECT strftime(started_at, '%Y-%m-%d') AS d,
           md5(string_agg(session_id || chr(9) || coalesce(octet_length(encode(external_notes))::VARCHAR, '-1') || chr(9) || coalesce(external_notes, ''), chr(10) ORDER BY session_id)) AS h
         FROM ${from} GROUP BY d`,
      )
    ).getRows();
    return new Map(rows.map((r) => [String(r[0]), String(r[1])]));
  } finally {
    c.closeSync();
    inst.closeSync();
  }
}
