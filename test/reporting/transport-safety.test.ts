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
import { RedirectError } from '../../src/reporting/errors/index.js';
import { TokenClient } from '../../src/auth/TokenClient.js';
import { SessionControlClient } from '../../src/control/SessionControlClient.js';
import { getCurrentUser } from '../../src/identity/getCurrentUser.js';
import { runCli } from '../helpers/cli.js';
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

  it('connection refused names the URL and says "connection refused"', async () => {
    const gone = await server(() => {});
    const port = new URL(gone.url).port;
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    const r = await runCli(['backfill', '--from', FROM, '--to', TO, '--chunk', '1d', '--max-attempts', '1'], {
      REPORTING_URL: `http://127.0.0.1:${port}/graphql`,
      REPORTING_API_KEY: KEY,
      SESSION_ETL_DATA_DIR: await tempDir(),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`connection to the reporting endpoint http://127.0.0.1:${port}/graphql failed: connection refused`);
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
