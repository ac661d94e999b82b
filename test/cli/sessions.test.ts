import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateInMemory, parseListRequest } from '../../src/list/index.js';
import { runBackfill } from '../../src/pipeline/run.js';
import { openDb } from '../../src/store/duckdb.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';
import { parseCsvWithPython } from '../helpers/python-csv.js';
import { D } from '../helpers/time.js';

const FROM = 1767225600; // 2026-01-01
const TO = FROM + 62 * D; // through February
const NOW = TO + D;
const fx = useEmulator({ seed: 21, from: FROM, to: NOW, now: NOW, sessionsPerDay: 60 }, { prefix: 'session-etl-sessions-' });
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'session-etl-sessions-'));
  await runBackfill({ reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', from: FROM, to: TO, now: () => NOW * 1000 });
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

// "All recorded sessions of agents at example.com last month, longest first, 20 a page, page 3."
const question = {
  filter: 'agent.email=".*@example\\.com" & recording="true"',
  fromDate: '2026-02-01',
  toDate: '2026-03-01',
  ascending: 'duration=false',
  pageSize: '20',
  offset: '40',
  attributeNames: 'id,agent.email,duration,started,recording',
};

describe('session-etl sessions', () => {
  it.each(['duckdb', 'parquet'])('answers the question from the %s store exactly as the library does over the in-memory list', async (source) => {
    const r = await runCli(
      [
        'sessions', '--data-dir', dataDir, '--source', source, '--format', 'json',
        '--filter', question.filter, '--from', question.fromDate, '--to', question.toDate,
        '--ascending', question.ascending, '--pageSize', question.pageSize, '--offset', question.offset,
        '--attributeNames', question.attributeNames,
      ],
      {},
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const got = JSON.parse(r.stdout);
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, TO);
    const expected = evaluateInMemory(truth, parseListRequest(question));
    expect(got.items).toEqual(expected.items);
    expect(got.total).toBe(expected.total);
    expect(got.items).toHaveLength(20);
    for (const it of got.items) {
      expect(it.agent.email).toMatch(/@example\.com$/);
      expect(it.recording).toBe(true);
    }
    const durations = got.items.map((i: { duration: number }) => i.duration);
    expect(durations).toEqual([...durations].sort((a, b) => b - a));
  });

  it('csv and ndjson, and sessions get <id>', async () => {
    const id = fx.emu.dataset.sessionsStartedIn(FROM, FROM + D)[0]!.id;
    const csv = await runCli(['sessions', '--data-dir', dataDir, '--format', 'csv', '--attributeNames', 'id,pin', '--pageSize', '3'], {});
    expect(csv.code).toBe(0);
    const records = parseCsvWithPython(csv.stdout);
    expect(records[0]).toEqual(['id', 'pin']);
    expect(records).toHaveLength(4);
    const nd = await runCli(['sessions', '--data-dir', dataDir, '--format', 'ndjson', '--pageSize', '2'], {});
    expect(nd.stdout.trim().split('\n').map((l) => JSON.parse(l))).toHaveLength(2);
    const one = await runCli(['sessions', 'get', id, '--data-dir', dataDir], {});
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toEqual(fx.emu.dataset.byId(id));
    const none = await runCli(['sessions', 'get', '00000000-0000-4000-8000-000000000000', '--data-dir', dataDir], {});
    expect(none.code).toBe(1);
  });

  it('a bad filter points at the position and exits 2', async () => {
    const r = await runCli(['sessions', '--data-dir', dataDir, '--filter', 'agent.email="x" &'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/\^/);
    const j = await runCli(['sessions', '--data-dir', dataDir, '--filter', 'pin="a*+"'], {});
    expect(j.code).toBe(2);
    expect(j.stderr).toMatch(/possessive/i);
  });

  it('csv: a cell a spreadsheet would run as a formula gets a leading quote, at its start and after a ; or a tab; numbers are left alone', async () => {
    // Customer names are typed by end customers: five of them as an attacker would type them (the
    // last two for a spreadsheet that splits on `;`, as in most European locales, or on tabs).
    const hostile = ['-1+HYPERLINK("http://evil.example/")', "-2+3+cmd|' /C calc'!A0", '=1+1', "x;=cmd|' /C calc'!A0", 'a\t=1+1'];
    const ids = fx.emu.dataset.sessionsStartedIn(TO - D, TO).slice(0, hostile.length).map((s) => s.id);
    const db = await openDb(join(dataDir, 'sessions.duckdb'), { allowedDirectories: [dataDir] });
    const before = new Map<string, unknown>();
    try {
      for (const [i, id] of ids.entries()) {
        const r = await db.conn.runAndReadAll('SELECT external_customer_name FROM sessions WHERE session_id = ?', [id]);
        before.set(id, r.getRowObjectsJS()[0]!.external_customer_name);
        await db.conn.run('UPDATE sessions SET external_customer_name = ? WHERE session_id = ?', [hostile[i]!, id]);
      }
    } finally {
      db.close();
    }
    try {
      const filter = ids.map((id) => `id="${id}"`).join(' | ');
      const r = await runCli(['sessions', '--data-dir', dataDir, '--output', 'csv', '--filter', filter, '--sort', 'id', '--attribute-names', 'id,externalFields.customerName,duration,started'], {});
      expect(r.code, r.stderr).toBe(0);
      // The one dialect (docs/data.md): CRLF line ends, the header's field names bare, every text cell quoted, times in ISO 8601 UTC.
      const lines = r.stdout.split('\r\n');
      expect(lines.pop()).toBe('');
      expect(lines[0]).toBe('id,externalFields.customerName,duration,started');
      expect(lines.slice(1).every((l) => l.startsWith('"') && !l.includes('\n'))).toBe(true);
      // Read back by an independent reader.
      const records = parseCsvWithPython(r.stdout);
      expect(records[0]).toEqual(['id', 'externalFields.customerName', 'duration', 'started']);
      const byId = new Map(records.slice(1).map((cells) => [cells[0]!, cells]));
      const neutralised = ['\'-1+HYPERLINK("http://evil.example/")', "'-2+3+cmd|' /C calc'!A0", "'=1+1", "x;'=cmd|' /C calc'!A0", "a\t'=1+1"];
      for (const [i, id] of ids.entries()) {
        const session = fx.emu.dataset.byId(id)!;
        expect(byId.get(id)).toEqual([id, neutralised[i], String(session.duration), new Date(session.started! * 1000).toISOString().replace('.000Z', 'Z')]);
      }
      // The durations, plain numbers, are not quoted; as a spreadsheet splitting on `;` or a tab reads
      // the file, no cell starts a formula.
      expect(lines.slice(1).every((l) => /,\d+,"[^"]+"$/.test(l))).toBe(true);
      for (const delimiter of [';', '\t']) {
        const formulas = parseCsvWithPython(r.stdout, delimiter).flat().filter((c) => /^[=+\-@]/.test(c));
        expect(formulas, delimiter).toEqual([]);
      }
    } finally {
      const restore = await openDb(join(dataDir, 'sessions.duckdb'), { allowedDirectories: [dataDir] });
      try {
        for (const [id, name] of before) await restore.conn.run('UPDATE sessions SET external_customer_name = ? WHERE session_id = ?', [name as string | null, id]);
      } finally {
        restore.close();
      }
    }
  });
});
