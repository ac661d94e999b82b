/**
 * The dashboard's HTTP server: the page and its assets (uPlot from node_modules, nothing from the
 * network), and the JSON API under /api/. Read-only: GET and HEAD only, nothing written anywhere.
 * With an access token (required off loopback) every request must present it (access-token.ts).
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { presentedToken, TOKEN_COOKIE, tokenMatches } from './access-token.js';
import { coverageCalendar, dataDirArgument } from './coverage-calendar.js';
import { quoteArg } from './shell-quote.js';
import { ParquetReader, QueryTimeoutError, readState, type DashboardSource } from './data-source.js';
import { buildOverview, type Overview } from './overview.js';
import { askedColumns, BadRequestError, charts, flatRows, listRequestOf, MAX_CSV_ROWS, parquetRowCount, querySessions, sessionsPerDay, toCsv } from './queries.js';
import { packageRoot } from '../util/package-root.js';

export interface DashboardOptions {
  source: DashboardSource;
  host: string;
  port: number;
  /** Required on every request when set. */
  token: string | null;
  maxLagSeconds: number;
  /** The next scheduled run, computed when asked. */
  nextRun: (nowMs: number) => Overview['nextRun'];
  /** The data directory as the user gave it, for the commands the page shows (undefined: the default). */
  dataDirArg?: string;
  /** With accounts: the configuration file and the account, added to the commands the page shows. */
  account?: { name: string; configArg?: string };
  now?: () => number;
  queryTimeoutMs?: number;
  /** Where to report a request that failed inside (never with the token). */
  onError?: (err: unknown) => void;
}

export interface Dashboard {
  url: string;
  server: Server;
  close(): Promise<void>;
}

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

interface Asset {
  type: string;
  body: Buffer;
}

/** The page's files, read once: ours from src/dashboard/assets, uPlot's from its package. */
function loadAssets(): Map<string, Asset> {
  const root = packageRoot();
  const own = join(root, 'src', 'dashboard', 'assets');
  const uplot = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
  const files: Array<[string, string, string]> = [
    ['/', join(own, 'index.html'), 'text/html; charset=utf-8'],
    ['/assets/app.js', join(own, 'app.js'), 'text/javascript; charset=utf-8'],
    ['/assets/style.css', join(own, 'style.css'), 'text/css; charset=utf-8'],
    ['/assets/uplot.js', join(uplot, 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
    ['/assets/uplot.css', join(uplot, 'uPlot.min.css'), 'text/css; charset=utf-8'],
    ['/favicon.ico', join(own, 'favicon.svg'), 'image/svg+xml'],
  ];
  return new Map(files.map(([path, file, type]) => [path, { type, body: readFileSync(file) }]));
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export async function startDashboard(o: DashboardOptions): Promise<Dashboard> {
  const assets = loadAssets();
  const reader = await ParquetReader.open(o.source.parquetRoot, { timeoutMs: o.queryTimeoutMs ?? 10_000, ...(o.source.account !== undefined ? { account: o.source.account } : {}) });
  // The calendar's per-day counts, read once now so that the first page load finds them cached.
  void sessionsPerDay(reader).catch(() => {});
  const now = o.now ?? Date.now;
  const dataDirArg =
    dataDirArgument(o.dataDirArg) +
    (o.account ? `${o.account.configArg ? ` --config ${quoteArg(o.account.configArg)}` : ''} --account ${quoteArg(o.account.name)}` : '');

  const api: Record<string, (q: URLSearchParams, res: ServerResponse) => Promise<void>> = {
    '/api/overview': async (_q, res) => json(res, await overview()),
    '/api/runs': async (_q, res) => json(res, { runs: (await overview()).runs }),
    '/api/coverage': async (_q, res) => {
      const reading = await readState(o.source);
      const perDay = await sessionsPerDay(reader);
      const cal = coverageCalendar(reading.snapshot?.coverage ?? [], perDay, now(), dataDirArg, reading.snapshot?.volumeAnomalies ?? []);
      json(res, { coverage: reading.snapshot?.coverage ?? [], ...cal });
    },
    '/api/charts': async (q, res) => json(res, await charts(reader, q.get('from') ?? undefined, q.get('to') ?? undefined)),
    '/api/sessions': async (q, res) => {
      const req = listRequestOf(q, { csv: false });
      const page = await querySessions(reader, req);
      json(res, { total: page.total, offset: page.offset, pageSize: page.pageSize, columns: askedColumns(req) ?? null, items: page.items });
    },
    '/api/sessions.csv': async (q, res) => {
      const req = listRequestOf(q, { csv: true });
      const page = await querySessions(reader, req);
      const body = toCsv(flatRows(page.items), askedColumns(req));
      send(res, 200, body, 'text/csv; charset=utf-8', {
        'Content-Disposition': 'attachment; filename="sessions.csv"',
        'Cache-Control': 'no-store',
        'X-Total-Count': String(page.total),
        ...(page.total > MAX_CSV_ROWS ? { 'X-Truncated': `first ${MAX_CSV_ROWS} of ${page.total} rows` } : {}),
      });
    },
  };

  async function overview(): Promise<Overview> {
    const reading = await readState(o.source);
    const t = now();
    const parquetRows = reading.snapshot?.rows != null ? null : await parquetRowCount(reader);
    return buildOverview({ reading, parquetRows, nowMs: t, maxLagSeconds: o.maxLagSeconds, nextRun: o.nextRun(t) });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (err instanceof BadRequestError) return json(res, { error: err.message }, 400);
      if (err instanceof QueryTimeoutError) return json(res, { error: err.message }, 503);
      o.onError?.(err);
      if (!res.headersSent) json(res, { error: `the dashboard could not answer: ${String((err as Error)?.message ?? err)}` }, 500);
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return json(res, { error: `${req.method} is not allowed: the dashboard is read-only (GET and HEAD only)` }, 405);
    }
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    if (o.token === null) {
      // No token: loopback only. A page on another site reaching us by a name it controls
      // (DNS rebinding) sends its own Host: refuse it.
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      if (!isLoopback(host)) return json(res, { error: 'this dashboard answers only to localhost / 127.0.0.1 addresses' }, 403);
    } else {
      const given = url.searchParams.get('token');
      if (given !== null && tokenMatches(o.token, given) && url.pathname === '/') {
        // Trade the address's token for a cookie, and take it out of the address bar and history.
        res.setHeader('Set-Cookie', `${TOKEN_COOKIE}=${encodeURIComponent(o.token)}; Path=/; HttpOnly; SameSite=Strict`);
        res.setHeader('Location', '/');
        return send(res, 303, '', 'text/plain; charset=utf-8');
      }
      if (!tokenMatches(o.token, presentedToken(req.headers))) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="session-etl dashboard"');
        return json(res, { error: 'an access token is required: open the address printed with ?token=<token> once, or send Authorization: Bearer <token>' }, 401);
      }
    }
    const asset = assets.get(url.pathname);
    if (asset) return send(res, 200, asset.body, asset.type, { 'Cache-Control': 'no-cache' }, req.method === 'HEAD');
    const route = api[url.pathname];
    if (!route) return json(res, { error: `no such page: ${url.pathname}` }, 404);
    if (req.method === 'HEAD') return send(res, 200, '', 'application/json; charset=utf-8', { 'Cache-Control': 'no-store' }, true);
    await route(url.searchParams, res);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${shownHost}:${addr.port}/`,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      reader.close();
    },
  };
}

function json(res: ServerResponse, body: unknown, status = 200): void {
  send(res, status, JSON.stringify(body), 'application/json; charset=utf-8', { 'Cache-Control': 'no-store' });
}

function send(res: ServerResponse, status: number, body: string | Buffer, type: string, headers: Record<string, string> = {}, headOnly = false): void {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(headOnly ? undefined : body);
}
