/**
 * What the transport refuses to trust or to send: redirects, connections that fail, keys that are
 * refused, bodies and records over the size limits. Real loopback servers and the built CLI.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ReportingClient } from '../../src/reporting/client.js';
import { BodyTooLargeError, RedirectError } from '../../src/reporting/errors/index.js';
import { MAX_RECORD_BYTES } from '../../src/reporting/record-size.js';
import { NDJSON_MAX_OBJECT_BYTES } from '../../src/store/ndjson.js';
import { DuckDBInstance } from '@duckdb/node-api';
import { writeFile } from 'node:fs/promises';
import { TokenClient } from '../../src/auth/token-client.js';
import { SessionControlClient } from '../../src/control/session-control-client.js';
import { getCurrentUser } from '../../src/identity/get-current-user.js';
import { runCli } from '../helpers/cli.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { fakeTime } from '../helpers/capture.js';

const KEY = 'rk-TRANSPORT-9fQ2xLm7Zt4w';
const dirs: string[] = [];
const servers: Server[] = [];
afterAll(async () => {
  for (const s of servers) s.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-transport-'));
  dirs.push(d);
  return d;
}

/** A loopback server on port 0 that records every request it gets (method, url, headers, body). */
async function server(handle: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const seen: Array<{ url: string; headers: IncomingMessage['headers']; body: string }> = [];
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body });
      handle(req, res, body);
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  servers.push(s);
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/`, seen };
}

const EMPTY = JSON.stringify({ data: { sessions: [] } });
const FROM = '2026-01-01';
const TO = '2026-01-02';

describe('redirects are never followed', () => {
  it('a 302 to another origin fails the window: not in coverage, exit 1, the location named, nothing sent there', async () => {
    const other = await server((_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(EMPTY));
    const target = `${other.url}graphql?token=abc123`;
    const endpoint = await server((_q, res) => res.writeHead(302, { location: target }).end());
    const dataDir = await tempDir();
    const r = await runCli(['backfill', '--from', FROM, '--to', TO, '--chunk', '1d', '--json'], {
      REPORTING_URL: endpoint.url,
      REPORTING_API_KEY: KEY,
      SESSION_ETL_DATA_DIR: dataDir,
    });
    expect(r.code).toBe(1);
    expect(other.seen).toHaveLength(0);
    expect(endpoint.seen.length).toBeGreaterThan(0);
    expect(r.stderr).toContain(`HTTP 302 redirecting to ${other.url}graphql?…`);
    expect(r.stderr).toMatch(/set REPORTING_URL/);
    expect(r.stderr).not.toMatch(/abc123|run the same command again/);
    const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { checkpoint: unknown; windows: { done: number } };
    expect(summary.checkpoint).toBeNull();
    expect(summary.windows.done).toBe(0);
  });

  it('the client does not retry a redirect and names where it pointed', async () => {
    const endpoint = await server((_q, res) => res.writeHead(307, { location: 'http://mallory:pw-in-url@127.0.0.1:9/elsewhere#x' }).end());
    const time = fakeTime();
    const c = new ReportingClient({ url: endpoint.url, apiKey: KEY, now: time.now, sleep: time.sleep });
    const err = await c.fetchSessionsBody(0, 86_400).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedirectError);
    expect((err as RedirectError).location).toBe('http://127.0.0.1:9/elsewhere?…');
    expect((err as Error).message).not.toMatch(/mallory|pw-in-url/);
    expect(endpoint.seen).toHaveLength(1);
    // graphql-request's path (getSession) goes through the same transport.
    await expect(c.getSession('00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(RedirectError);
  });
});

describe('the token service, session control and identity clients do not follow redirects either', () => {
  it('credentials in the request never reach the redirect target', async () => {
    const other = await server((_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    const hop = await server((_q, res) => res.writeHead(308, { location: `${other.url}steal` }).end());
    const token = new TokenClient({ baseUrl: hop.url, clientId: 'cid', clientSecret: 'cs-SECRET-zz81Qw' });
    await expect(token.refresh('rt-REFRESH-77aPq')).rejects.toThrow(/HTTP 308 redirecting to http:\/\/127\.0\.0\.1:\d+\/steal.*set AUTH_URL/);
    const control = new SessionControlClient({ baseUrl: hop.url, accessToken: 'at-ACCESS-5kd0' });
    await expect(control.startRemoteViewSession({})).rejects.toThrow(/HTTP 308 redirecting to .*set CONSOLE_URL/);
    await expect(getCurrentUser({ apiUrl: hop.url, accessToken: 'at-ACCESS-5kd0' })).rejects.toThrow(/HTTP 308 redirecting to .*set API_URL/);
    expect(hop.seen).toHaveLength(3);
    expect(other.seen).toHaveLength(0);
  });
});

describe('first-use failures say what is wrong and what to do', () => {
  it('a refused key names REPORTING_API_KEY and does not suggest running again', async () => {
    const endpoint = await server((_q, res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}'));
    const r = await runCli(['backfill', '--from', FROM, '--to', TO, '--chunk', '1d'], {
      REPORTING_URL: endpoint.url,
      REPORTING_API_KEY: KEY,
      SESSION_ETL_DATA_DIR: await tempDir(),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/refused the API key \(HTTP 401\): check REPORTING_API_KEY/);
    expect(r.stderr).not.toMatch(/run the same command again/);
    expect(r.stderr).toMatch(/running it again will not help until that is fixed/);
  });

  it('connection refused names the URL and says "connection refused" (the first connection: exit 2, a setting)', async () => {
    const gone = await server(() => {});
    const port = new URL(gone.url).port;
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    const r = await runCli(['backfill', '--from', FROM, '--to', TO, '--chunk', '1d', '--max-attempts', '1'], {
      REPORTING_URL: `http://127.0.0.1:${port}/graphql`,
      REPORTING_API_KEY: KEY,
      SESSION_ETL_DATA_DIR: await tempDir(),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`cannot connect to the reporting endpoint http://127.0.0.1:${port}/graphql: ECONNREFUSED: connection refused`);
  });

  it('a REPORTING_URL without http:// exits 2 saying what a valid one looks like', async () => {
    const r = await runCli(['backfill', '--from', FROM, '--to', TO], {
      REPORTING_URL: 'reporting.example.com/graphql',
      REPORTING_API_KEY: KEY,
      SESSION_ETL_DATA_DIR: await tempDir(),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/expected an http:\/\/ or https:\/\/ URL such as https:\/\/reporting\.example\.com/);
  });

  it('a REPORTING_URL with a password exits 2 and never prints the password', async () => {
    const r = await runCli(['config'], { REPORTING_URL: 'https://etl:url-Passw0rd-1@reporting.example.com/', REPORTING_API_KEY: KEY });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/user name or password cannot be used/);
    expect(r.stdout + r.stderr).not.toContain('url-Passw0rd-1');
  });
});

/** A session in the fast shape (fields in the order the query selects them). */
function session(id: string, started: number, notes = 'n'): string {
  return JSON.stringify({
    id, companyId: 'c1', pin: '001', started, ended: started + 60, duration: 60, sessionType: 'rv', recording: false, recordingUrl: null,
    agent: { id: 'a1', name: 'Ann', email: 'ann@example.com' }, agentGroupId: 7, agentIp: '10.0.0.1', customerIp: '10.0.0.2',
    externalFields: { customerName: 'Cy', externalCaseId: 'x1', notes, accountingInfo: null, customerDeviceType: null, customerOs: null },
  });
}
const JAN1 = Date.UTC(2026, 0, 1) / 1000;
const window = (body: string) => /start: (\d+), end: (\d+)/.exec(body)!.slice(1).map(Number) as [number, number];
const sessionsBody = (records: string[]) => `{"data":{"sessions":[${records.join(',')}]}}`;

describe('size limits: nothing is committed that DuckDB cannot read back, and no body fills the memory', () => {
  it('keeps read_json able to read every record accepted', () => {
    expect(NDJSON_MAX_OBJECT_BYTES).toBeGreaterThan(MAX_RECORD_BYTES);
  });

  // One notes string over DuckDB's default maximum_object_size (16 MiB) used to be committed, and
  // every later merge failed.
  const huge = 'x'.repeat(17 * 1024 * 1024);
  const bigId = '11111111-1111-4111-8111-111111111111';
  const endpointWithHugeRecord = () =>
    server((_q, res, body) => {
      const [start] = window(body);
      const records = start === JAN1 ? [session('22222222-2222-4222-8222-222222222222', JAN1 + 10), session(bigId, JAN1 + 20, huge)] : [];
      res.writeHead(200, { 'content-type': 'application/json' }).end(sessionsBody(records));
    });

  it('a record over the limit fails its window before commit, naming the session and its size', async () => {
    const endpoint = await endpointWithHugeRecord();
    // A 17 MiB answer: more than the default memory budget's share per answer (8 MiB), so a budget that holds it.
    const r = await runCli(['backfill', '--from', FROM, '--to', TO, '--chunk', '1d', '--json'], {
      REPORTING_URL: endpoint.url,
      REPORTING_API_KEY: KEY,
      SESSION_ETL_DATA_DIR: await tempDir(),
      SESSION_ETL_MEMORY_LIMIT: '1GiB',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`invalid session record id "${bigId}": .*is \\d+ bytes of JSON, over the limit of ${MAX_RECORD_BYTES} bytes per record`));
    const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { checkpoint: unknown };
    expect(summary.checkpoint).toBeNull();
  });

  it('with the default memory budget the 17 MiB answer is over its share per answer: the window fails naming the budget that caps maxBodyBytes', async () => {
    const endpoint = await endpointWithHugeRecord();
    const r = await runCli(['backfill', '--from', FROM, '--to', TO, '--chunk', '1d'], { REPORTING_URL: endpoint.url, REPORTING_API_KEY: KEY, SESSION_ETL_DATA_DIR: await tempDir() });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/larger than the limit of \d+ bytes \(maxBodyBytes\)/);
    expect(r.stderr).toContain('raise maxBodyBytes in the configuration and the memory budget (--memory-limit');
  });

  it('under --on-invalid quarantine it goes to rejected_sessions truncated, and later runs still merge', async () => {
    const endpoint = await endpointWithHugeRecord();
    const dataDir = await tempDir();
    const env = { REPORTING_URL: endpoint.url, REPORTING_API_KEY: KEY, SESSION_ETL_DATA_DIR: dataDir, SESSION_ETL_MEMORY_LIMIT: '1GiB' };
    const args = ['backfill', '--from', FROM, '--to', TO, '--chunk', '1d', '--on-invalid', 'quarantine'];
    expect((await runCli(args, env)).code).toBe(0);
    expect((await runCli(args, env)).code).toBe(0);
    expect((await readDuckDbSessions(dataDir)).map((x) => x.session_id)).toEqual(['22222222-2222-4222-8222-222222222222']);
    const inst = await DuckDBInstance.create(join(dataDir, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
    const c = await inst.connect();
    const rows = (await c.runAndReadAll('SELECT session_id, length(raw) AS n FROM rejected_sessions')).getRowObjectsJS();
    c.closeSync();
    inst.closeSync();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.session_id).toBe(bigId);
      expect(Number(row.n)).toBeLessThan(4096);
    }
  });

  it('an endless body is cut at maxBodyBytes: BodyTooLargeError, not a process that fills its memory', async () => {
    const endpoint = await server((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      res.write('{"data":{"sessions":[');
      pump();
    });
    const time = fakeTime();
    const c = new ReportingClient({ url: endpoint.url, apiKey: KEY, now: time.now, sleep: time.sleep, timeoutMs: 20_000, maxBodyBytes: 1024 * 1024 });
    const err = await c.fetchSessionsBody(JAN1, JAN1 + 86_400).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BodyTooLargeError);
    expect((err as Error).message).toMatch(/larger than the limit of 1048576 bytes \(maxBodyBytes\)/);
  });

  it('a body over maxBodyBytes splits the window: smaller windows give smaller bodies, and the run completes', async () => {
    // 60 sessions a day, one an hour... ~500 bytes each: a day's body is ~30 KB, an hour's ~1 KB.
    const all = Array.from({ length: 48 }, (_, i) => ({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, started: JAN1 + i * 1800 + 5 }));
    const endpoint = await server((_q, res, body) => {
      const [start, end] = window(body);
      const records = all.filter((x) => x.started >= start && x.started < end).map((x) => session(x.id, x.started));
      res.writeHead(200, { 'content-type': 'application/json' }).end(sessionsBody(records));
    });
    const dataDir = await tempDir();
    const config = join(dataDir, '..', `cfg-${Date.now()}.json`);
    await writeFile(config, JSON.stringify({ maxBodyBytes: 8192 }));
    const env = { REPORTING_URL: endpoint.url, REPORTING_API_KEY: KEY, SESSION_ETL_DATA_DIR: dataDir };
    const r = await runCli(['backfill', '--from', FROM, '--to', TO, '--chunk', '1d', '--json', '--config', config], env);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { bisections: number; sessions: { new: number } };
    expect(summary.bisections).toBeGreaterThan(0);
    expect(summary.sessions.new).toBe(48);

    // Down to --min-chunk and still too large: the window fails, naming the limit.
    const tiny = join(dataDir, '..', `cfg-tiny-${Date.now()}.json`);
    await writeFile(tiny, JSON.stringify({ maxBodyBytes: 1024, minChunk: '6h' }));
    const f = await runCli(['backfill', '--from', FROM, '--to', TO, '--chunk', '1d', '--config', tiny], { ...env, SESSION_ETL_DATA_DIR: await tempDir() });
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(/cannot be split below the minimum chunk .*larger than the limit of 1024 bytes \(maxBodyBytes\).*raise maxBodyBytes in the configuration/);
  });
});
