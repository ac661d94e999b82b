/**
 * The scheduler's `GET /metrics` and `GET /healthz` (503 with the reasons when unhealthy). On loopback it answers
 * only requests addressed to a loopback name (DNS rebinding: util/loopback.ts).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Health } from './health.js';
import { hostOfHeader, isLoopback } from '../util/loopback.js';

interface MonitoringServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  metrics(): Promise<{ body: string; contentType: string }>;
  health(): Health & Record<string, unknown>;
}

export class MonitoringServerError extends Error {
  override readonly name = 'MonitoringServerError';
}

export async function startMonitoringServer(o: MonitoringServerOptions): Promise<{ url: string; close(): Promise<void> }> {
  const loopbackOnly = isLoopback(o.host);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (loopbackOnly && !isLoopback(hostOfHeader(req.headers.host))) {
      return send(403, 'text/plain; charset=utf-8', 'this endpoint answers only to localhost / 127.0.0.1 addresses\n');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return send(405, 'text/plain; charset=utf-8', 'only GET and HEAD\n');
    }
    if (path === '/metrics') {
      o.metrics().then(
        (m) => send(200, m.contentType, m.body),
        (err: unknown) => send(500, 'text/plain; charset=utf-8', `metrics failed: ${err instanceof Error ? err.message : String(err)}\n`),
      );
      return;
    }
    if (path === '/healthz') {
      const h = o.health();
      return send(h.healthy ? 200 : 503, 'application/json', JSON.stringify(h) + '\n');
    }
    send(404, 'text/plain; charset=utf-8', 'not found: try /metrics or /healthz\n');
  });
  // Node's 5 s keep-alive closes a connection about when a client (undici: 4 s) reuses it ("other side closed",
  // seen in the tests): scrapers are better served by the usual 65 s; headersTimeout must stay above it.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new MonitoringServerError(
          `cannot serve metrics on ${o.host}:${o.port} (${err.code ?? err.message}): ` +
            (err.code === 'EADDRINUSE' ? 'the port is in use; choose another --http-port, or 0 for a free one' : 'check --http-host and --http-port'),
          { cause: err },
        ),
      ),
    );
    server.listen(o.port, o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
