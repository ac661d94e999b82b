/**
 * The dashboard's JSON API over plain HTTP, served by the real `session-etl dashboard` process over
 * a data directory the real CLI made (a known hole, known runs, a failed run); figures checked
 * against the Parquet dataset read with hyparquet.
 */
import { copyFile, rename } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { runCli } from '../helpers/cli.js';
import { parseCsvWithPython } from '../helpers/python-csv.js';
import { readParquetDataset } from '../helpers/read-store.js';
import { D, day, FROM, HOLE, makeFixture, PARTIAL_DAY, startDashboardCli, type Fixture, type RunningDashboard } from './fixture.js';

let fx: Fixture;
let dash: RunningDashboard;
let perDay: Map<string, number>;
let total: number;

beforeAll(async () => {
  fx = await makeFixture();
  dash = await startDashboardCli(['--data-dir', fx.dataDir], {});
  const parts = await readParquetDataset(fx.dataDir);
  perDay = new Map(parts.map((p) => [p.partition.replace('date=', ''), p.rows.length]));
  total = parts.reduce((n, p) => n + p.rows.length, 0);
}, 120_000);
afterAll(async () => {
  await dash?.stop();
  await fx?.cleanup();
});

const get = (path: string, init?: RequestInit) => dash.fetch(path, init);
const getJson = async (path: string) => {
  const res = await get(path);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as any;
};

describe('dashboard API', () => {
  it('overview: failing because the last run failed, with the reason, the checkpoint and the stored sessions', async () => {
    const o = await getJson('/api/overview');
    expect(o.health.state).toBe('failing');
    expect(o.health.reasons.join('\n')).toMatch(/last run backfill-\S+ \(backfill\) failed/);
    expect(o.health.reasons.join('\n')).toMatch(/1 coverage hole\(s\): the calendar shows each one/);
    expect(o.checkpoint).toBe(new Date(HOLE.from * 1000).toISOString().replace('.000Z', 'Z'));
    expect(o.totalSessions).toBe(total);
    expect(o.running).toBeNull();
    expect(o.nextRun.cron).toBe('0 2 * * *');
    expect(Date.parse(o.nextRun.at)).toBeGreaterThan(Date.now());
  });

  it('runs: newest first, the failed one with its error and what it committed', async () => {
    const { runs } = await getJson('/api/runs');
    expect(runs.map((r: any) => r.outcome)).toEqual(['failed', 'succeeded', 'succeeded']);
    expect(runs[0].error).toMatch(/answered HTTP 5\d\d; data up to \S+ is committed/);
    expect(runs[2].rangeFrom).toBe(new Date(FROM * 1000).toISOString());
    expect(runs[1].sessionsNew + runs[2].sessionsNew).toBe(total);
  });

  it('coverage: one day per UTC day to today, in the words of `status` (its partial days, its holes); the hole days carry the backfill command that fills the hole', async () => {
    const c = await getJson('/api/coverage');
    const today = day(Math.floor(Date.now() / 1000));
    expect(c.days[0].date).toBe(day(FROM));
    expect(c.days.at(-1).date).toBe(today);
    expect(c.days).toHaveLength(Math.round((Date.parse(today) / 1000 - FROM) / D) + 1);
    const byDate = new Map<string, any>(c.days.map((d: any) => [d.date, d]));
    const st = JSON.parse((await runCli(['status', '--json'], fx.env())).stdout);
    // status: partial days HOLE.from (its midnight only) and FROM+7 (its first hour); one hole.
    expect(st.partialDays.map((p: any) => p.date)).toEqual([day(HOLE.from), day(PARTIAL_DAY)]);
    expect(c.days.filter((d: any) => d.state === 'partial').map((d: any) => d.date)).toEqual(st.partialDays.map((p: any) => p.date));
    expect(st.coverageHoles).toEqual([{ from: new Date(HOLE.from * 1000).toISOString().replace('.000Z', 'Z'), to: new Date(HOLE.to * 1000).toISOString().replace('.000Z', 'Z') }]);
    const fill = `session-etl backfill --from ${day(HOLE.from)} --to ${day(HOLE.to)} --data-dir ${fx.dataDir}`;
    expect(byDate.get(day(HOLE.from + D))).toMatchObject({ state: 'hole', command: fill });
    expect(byDate.get(day(HOLE.from))).toMatchObject({ state: 'partial', command: fill });
    for (const t of [FROM, FROM + D, FROM + 2 * D, FROM + 5 * D, FROM + 6 * D]) {
      expect(byDate.get(day(t))).toMatchObject({ state: 'covered', command: null, sessions: perDay.get(day(t)) });
    }
    // After the last exported instant: not exported yet, not a hole; the failed backfill's days are
    // resumed by running it again (as `status` says), the days after it by export.
    const export_ = `session-etl export --data-dir ${fx.dataDir}`;
    const resume = `session-etl backfill --from ${day(FROM + 8 * D)} --to ${day(FROM + 9 * D)} --data-dir ${fx.dataDir}`;
    expect(byDate.get(day(FROM + 8 * D))).toMatchObject({ state: 'not-yet', command: resume });
    expect(byDate.get(today)).toMatchObject({ state: 'not-yet', command: export_ });
    const status = await runCli(['status', '--data-dir', fx.dataDir], fx.env());
    expect(status.stdout).toContain(`resume: ${resume}`);
    expect(c.gaps[0]).toMatchObject({ kind: 'hole', command: fill });
    expect(c.gaps[1]).toMatchObject({ kind: 'after-checkpoint', command: resume });
  });

  it('charts: per-day counts and medians over the range, by type and top agents add up', async () => {
    const c = await getJson(`/api/charts?from=${day(FROM)}&to=${day(FROM + 2 * D)}`);
    expect(c.perDay.map((d: any) => [d.date, d.sessions])).toEqual([0, 1, 2].map((i) => [day(FROM + i * D), perDay.get(day(FROM + i * D))]));
    const inRange = [0, 1, 2].reduce((n, i) => n + perDay.get(day(FROM + i * D))!, 0);
    expect(c.byType.reduce((n: number, t: any) => n + t.sessions, 0)).toBe(inRange);
    expect(c.topAgents.length).toBeGreaterThan(0);
    expect((await get('/api/charts?from=yesterday')).status).toBe(400);
  });

  it('charts: every day of the range in the calendar\'s words; a day not exported has no value (never 0), a partial day is marked', async () => {
    const c = await getJson(`/api/charts?from=${day(FROM + 2 * D)}&to=${day(FROM + 9 * D)}`);
    expect(c.perDay.map((d: any) => [d.date, d.state])).toEqual([
      [day(FROM + 2 * D), 'covered'],
      [day(HOLE.from), 'partial'],
      [day(HOLE.from + D), 'hole'],
      [day(HOLE.to), 'covered'],
      [day(FROM + 6 * D), 'covered'],
      [day(PARTIAL_DAY), 'partial'],
      [day(FROM + 8 * D), 'not-yet'],
      [day(FROM + 9 * D), 'not-yet'],
    ]);
    for (const d of c.perDay) {
      if (d.state === 'hole' || d.state === 'not-yet') expect(d.sessions, d.date).toBeNull();
      else expect(d.sessions, d.date).toBe(perDay.get(d.date) ?? 0);
    }
  });

  it('sessions: the list conventions, paged; the same rows as `session-etl sessions` on the Parquet dataset', async () => {
    const q = 'filter=recording%3D%22true%22&sort=started%20asc&attributeNames=id,started,recording';
    const p1 = await getJson(`/api/sessions?${q}&pageSize=10&offset=0`);
    const p2 = await getJson(`/api/sessions?${q}&pageSize=10&offset=10`);
    const cli = await runCli(['sessions', '--source', 'parquet', '--filter', 'recording="true"', '--sort', 'started asc', '--attribute-names', 'id,started,recording', '--page-size', '20', '--output', 'json'], fx.env());
    const expected = JSON.parse(cli.stdout);
    expect(p1.total).toBe(expected.total);
    expect([...p1.items, ...p2.items]).toEqual(expected.items);
    expect(p1.items.every((i: any) => i.recording === true)).toBe(true);
  });

  it('sessions: what a user types is a value, never SQL; bad requests are refused with the reason', async () => {
    const inj = await getJson(`/api/sessions?filter=${encodeURIComponent(`id="x' OR 1=1 --"`)}`);
    expect(inj.total).toBe(0);
    const bad = await get('/api/sessions?filter=id%3D');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/filter/);
    expect((await get('/api/sessions?pageSize=5000')).status).toBe(400);
    expect((await get('/api/sessions?limit=5')).status).toBe(400);
  });

  it('sessions.csv: every match as CSV, the columns asked for', async () => {
    const res = await get(`/api/sessions.csv?fromDate=${day(FROM)}&toDate=${day(FROM + D)}&attributeNames=id,started,agent.name&sort=id`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toMatch(/attachment; filename="sessions.csv"/);
    const text = await res.text();
    expect(text.endsWith('\r\n')).toBe(true);
    const lines = parseCsvWithPython(text);
    expect(lines[0]).toEqual(['id', 'started', 'agent.name']);
    const dayRows = (await readParquetDataset(fx.dataDir)).filter((p) => p.partition === `date=${day(FROM)}`).flatMap((p) => p.rows);
    expect(lines.slice(1).map((l) => l[0])).toEqual(dayRows.map((r) => String(r.session_id)).sort());
    // Times as ISO 8601 in UTC (a spreadsheet reads them as times), the same instants as stored.
    const startedOf = new Map(dayRows.map((r) => [String(r.session_id), r.started_at as Date | number]));
    for (const l of lines.slice(1)) {
      const [id, started] = l;
      expect(started).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      const stored = startedOf.get(id!);
      expect(Date.parse(started!)).toBe(Math.floor((stored instanceof Date ? stored.getTime() : Number(stored) * 1000) / 1000) * 1000);
    }
  });

  it('sessions.csv: a customer name typed as a formula gets a leading quote, even after a number, a ; or a tab', async () => {
    const hostile = ['-1+HYPERLINK("http://evil.example/")', "-2+3+cmd|' /C calc'!A0", '@SUM(A1)', "x;=cmd|' /C calc'!A0", 'a\t=1+1'];
    const file = join(fx.dataDir, 'parquet', 'sessions', `date=${day(FROM)}`, 'part-0.parquet');
    const ids = (await readParquetDataset(fx.dataDir)).find((p) => p.partition === `date=${day(FROM)}`)!.rows.slice(0, hostile.length).map((r) => String(r.session_id));
    // The partition rewritten with those names, as a run would have stored them from the vendor.
    await copyFile(file, `${file}.orig`);
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const lit = (v: string) => `'${v.replace(/'/g, "''")}'`;
    const cases = ids.map((id, i) => `WHEN session_id = ${lit(id)} THEN ${lit(hostile[i]!)}`).join(' ');
    await conn.run(`COPY (SELECT * REPLACE (CASE ${cases} ELSE external_customer_name END AS external_customer_name) FROM read_parquet(${lit(file)})) TO ${lit(`${file}.new`)} (FORMAT parquet)`);
    conn.closeSync();
    db.closeSync();
    await rename(`${file}.new`, file);
    try {
      const filter = encodeURIComponent(ids.map((id) => `id="${id}"`).join(' | '));
      const res = await get(`/api/sessions.csv?filter=${filter}&attributeNames=id,externalFields.customerName,duration`);
      expect(res.status).toBe(200);
      const text = await res.text();
      // Read back by an independent reader: the cells neutralised at their start and after a ; or a tab.
      const byId = new Map(parseCsvWithPython(text).slice(1).map((cells) => [cells[0]!, cells]));
      const neutralised = ['\'-1+HYPERLINK("http://evil.example/")', "'-2+3+cmd|' /C calc'!A0", "'@SUM(A1)", "x;'=cmd|' /C calc'!A0", "a\t'=1+1"];
      for (const [i, id] of ids.entries()) expect(byId.get(id)?.slice(0, 2)).toEqual([id, neutralised[i]]);
      // The durations, plain numbers, are left as they are (not quoted).
      expect(text.trimEnd().split('\r\n').slice(1).every((l) => /,\d+$/.test(l))).toBe(true);
      // As a spreadsheet splitting on `;` or a tab reads it, no cell starts a formula.
      for (const delimiter of [';', '\t']) expect(parseCsvWithPython(text, delimiter).flat().filter((c) => /^[=+\-@]/.test(c)), delimiter).toEqual([]);
    } finally {
      await rename(`${file}.orig`, file);
    }
  });

  it('read-only and locked down: only GET/HEAD, security headers, no caching of answers', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) expect((await get('/api/overview', { method })).status).toBe(405);
    const res = await get('/api/overview');
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect((await get('/api/nothing')).status).toBe(404);
    // A page on another site reaching us under its own name (DNS rebinding) is refused.
    // (fetch sets Host itself: node:http lets the test send another.)
    const status = await new Promise<number>((resolve, reject) => {
      request(new URL('/api/overview', dash.url), { headers: { Host: 'evil.example' } }, (r) => {
        r.resume();
        resolve(r.statusCode!);
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(403);
  });
});

describe('the dashboard command', () => {
  it('bad flags and unusable data directories exit 2 with the reason', async () => {
    const badPort = await runCli(['dashboard', '--port', 'x', '--data-dir', fx.dataDir]);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toMatch(/--port must be a whole number/);
    const missing = await runCli(['dashboard', '--port', '0', '--data-dir', join(fx.dataDir, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/does not exist/);
    const open = await runCli(['dashboard', '--port', '0', '--host', '0.0.0.0', '--data-dir', fx.dataDir]);
    expect(open.code).toBe(2);
    expect(open.stderr).toMatch(/SESSION_ETL_DASHBOARD_TOKEN/);
  });
});
