/**
 * An HTTP proxy on 127.0.0.1 (port 0) in front of the emulator that rewrites chosen records of
 * chosen `sessions` answers — the emulator itself only serves schema-valid data. Point
 * REPORTING_URL at `url`. `rewrite` sees every answer to a `sessions` query with its window and
 * returns the records to send instead (or undefined to pass the answer through); `raw` may then
 * edit the serialised body (for bytes JSON.stringify never writes). `respond` can answer a request
 * itself (used to play a server that echoes the request's headers).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export type JsonRecord = Record<string, unknown>;

export interface ProxyRequest {
  headers: IncomingMessage['headers'];
  body: string;
  /** The `sessions(start, end)` window, when the query is one. */
  window?: { start: number; end: number };
}

export interface ProxyOptions {
  rewrite?(records: JsonRecord[], req: ProxyRequest): JsonRecord[] | undefined;
  raw?(body: string, req: ProxyRequest): Buffer | string;
  respond?(req: ProxyRequest): { status: number; headers?: Record<string, string>; body: string } | undefined;
  /** Sees every rewritten answer as sent. */
  onSent?(body: Buffer, req: ProxyRequest): void;
}

export interface CorruptingProxy {
  url: string;
  /** Answers whose records were rewritten. */
  rewritten: number;
  requests: number;
  close(): Promise<void>;
}

const WINDOW = /sessions\(\s*start:\s*(\d+)\s*,\s*end:\s*(\d+)\s*\)/;

export async function startCorruptingProxy(target: string, opts: ProxyOptions): Promise<CorruptingProxy> {
  const base = target.replace(/\/+$/, '');
  const state = { rewritten: 0, requests: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        state.requests++;
        const body = Buffer.concat(chunks).toString('utf8');
        let query = '';
        try {
          query = String((JSON.parse(body) as { query?: unknown }).query ?? '');
        } catch {
          // not JSON: forwarded as it is
        }
        const m = WINDOW.exec(query);
        const preq: ProxyRequest = { headers: req.headers, body, ...(m ? { window: { start: Number(m[1]), end: Number(m[2]) } } : {}) };
        const own = opts.respond?.(preq);
        if (own) {
          res.writeHead(own.status, { 'content-type': 'application/json', ...own.headers });
          res.end(own.body);
          return;
        }
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) {
          if (typeof v === 'string' && !['host', 'content-length', 'connection'].includes(k)) headers[k] = v;
        }
        let up: Response;
        try {
          up = await fetch(`${base}${req.url ?? '/'}`, { method: req.method ?? 'GET', headers, ...(req.method === 'POST' ? { body } : {}) });
        } catch {
          req.socket.destroy();
          return;
        }
        let out: Buffer = Buffer.from(await up.arrayBuffer());
        if (m && up.status === 200) {
          try {
            const parsed = JSON.parse(out.toString('utf8')) as { data?: { sessions?: JsonRecord[] }; errors?: unknown };
            const list = parsed.data?.sessions;
            const changed = Array.isArray(list) && !parsed.errors ? opts.rewrite?.(list, preq) : undefined;
            if (changed) {
              state.rewritten++;
              const text = JSON.stringify({ data: { sessions: changed } });
              const edited = opts.raw ? opts.raw(text, preq) : text;
              out = Buffer.isBuffer(edited) ? edited : Buffer.from(edited, 'utf8');
              opts.onSent?.(out, preq);
            }
          } catch {
            // a truncated body from the emulator: passed through as it is
          }
        }
        const h: Record<string, string> = {};
        up.headers.forEach((v, k) => {
          if (!['content-length', 'transfer-encoding', 'connection', 'content-encoding'].includes(k)) h[k] = v;
        });
        res.writeHead(up.status, { ...h, 'content-length': String(out.length) });
        res.end(out);
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    get rewritten() {
      return state.rewritten;
    },
    get requests() {
      return state.requests;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
