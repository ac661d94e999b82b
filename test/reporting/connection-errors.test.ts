/**
 * What a failed connection and a wrong address say (issue 28): the host and port refused, a port
 * fetch never connects to, a name with several addresses; a 404 is a setting to fix, not a reason
 * to run again. Real sockets on loopback and the built CLI.
 */
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/reporting/defaults.js';
import { createBytesTransport, type FetchLike } from '../../src/reporting/transport.js';
import { runCli } from '../helpers/cli.js';

const dirs: string[] = [];
const servers: Server[] = [];
afterAll(async () => {
  for (const s of servers) s.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A port nothing listens on: one the system gave a server, which is closed again. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** What the transport's error says for a request to `url` made with `fetchImpl`. */
async function failureOf(url: string, fetchImpl: FetchLike = fetch): Promise<string> {
  const request = createBytesTransport({ fetch: fetchImpl, timeoutMs: 5_000, maxBodyBytes: DEFAULT_MAX_BODY_BYTES, now: Date.now });
  return request(url, { method: 'POST', body: '{}' }).then(
    () => 'no error',
    (err: Error) => err.message,
  );
}

describe('a connection that fails says where and why', () => {
  it('refused: "connection refused to HOST:PORT"', async () => {
    const port = await closedPort();
    expect(await failureOf(`http://127.0.0.1:${port}/graphql`)).toBe(
      `connection to the reporting endpoint http://127.0.0.1:${port}/graphql failed: ECONNREFUSED: connection refused to 127.0.0.1:${port} ` +
        '(nothing listens there: is it running, and is the port right?)',
    );
  });

  it('a name whose every address refuses (IPv4 and IPv6) names each, not an empty message', async () => {
    const port = await closedPort();
    // The error Node gives when each address of a name refuses (happy eyeballs): a real one, from a real connect.
    const aggregate = await new Promise<Error>((resolve) => {
      const socket = connect({
        port,
        host: 'reporting.test',
        autoSelectFamily: true,
        lookup: ((_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) =>
          o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }]) : cb(null, '127.0.0.1', 4)) as never,
      });
      socket.on('error', resolve);
    });
    const message = await failureOf(`http://reporting.test:${port}/`, () => Promise.reject(new TypeError('fetch failed', { cause: aggregate })));
    expect(message).toContain(`ECONNREFUSED: connection refused to 127.0.0.1:${port} and [::1]:${port}`);
  });

  it('a port fetch never connects to (6000, X11) says so instead of "fetch failed", and names where the URL is set', async () => {
    expect(await failureOf('http://127.0.0.1:6000/graphql')).toBe(
      'cannot connect to the reporting endpoint http://127.0.0.1:6000/graphql: port 6000 is one fetch never connects to ' +
        '(blocked as unsafe by the Fetch standard, like 1, 6000 or 10080): use another port; nothing has answered at that address ' +
        'in this run, so it is not retried: check REPORTING_URL (or reportingUrl in the configuration)',
    );
  });
});

describe('a wrong path in REPORTING_URL', () => {
  it('a 404 fails the run (exit 1) saying to fix REPORTING_URL, not to run the same command again', async () => {
    const s = createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('Cannot POST /grapql'));
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    servers.push(s);
    const dataDir = await mkdtemp(join(tmpdir(), 'session-etl-404-'));
    dirs.push(dataDir);
    const r = await runCli(['backfill', '--from', '2026-01-01', '--to', '2026-01-02', '--json'], {
      REPORTING_URL: `http://127.0.0.1:${(s.address() as AddressInfo).port}/grapql`,
      REPORTING_API_KEY: 'k',
      SESSION_ETL_DATA_DIR: dataDir,
    });
    expect(r.code).toBe(1);
    const error = (JSON.parse(r.stdout) as { error: string }).error;
    expect(error).toContain('the reporting endpoint answered HTTP 404 (nothing is found at that address: check the path in REPORTING_URL');
    expect(error).toContain('running it again will not help until that is fixed');
    expect(error).not.toContain('run the same command again');
  });
});
