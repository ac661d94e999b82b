/**
 * The dashboard's HTTP server: the page and its assets (uPlot from node_modules, nothing from the
 * network), and the read-only JSON API under /api/ (POST only opens a browser session or asks for a
 * download ticket, both kept in memory). The page holds no data and is served to anyone on an
 * allowed Host; the API wants the token, a live browser session or a one-use download ticket
 * (access-token.ts). No cookie is ever set or read.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listen } from '../util/listen.js';
import { bearerToken, ExpiringIds, SESSION_TTL_MS, tokenMatches } from './access-token.js';
import { chartDays } from './chart-days.js';
import { loadAssets, SECURITY_HEADERS } from './assets.js';
import { coverageCalendar, unfinishedBackfills, type CoverageCalendar } from './coverage-calendar.js';
import type { CommandTarget } from '../util/suggested-command.js';
import { ParquetReader, QueryTimeoutError, type DashboardSource } from './data-source.js';
import { StateReader, type StateReading } from './state-reader.js';
import { accountRow, buildOverview, type AccountRow, type Overview } from './overview.js';
import { askedColumns, BadRequestError, charts, countSessions, listRequestOf, MAX_CSV_ROWS, parquetRowCount, querySessions, sessionsPerDay } from './queries.js';
import { RequestGate } from './request-gate.js';
import { ClientGoneError, json, JSON_TYPE, NO_STORE, send, unauthorized, writeOrWait } from './responses.js';
import { writeSessionsCsv } from './sessions-csv.js';
import { hostOfHeader, isLoopback } from '../util/loopback.js';
import { releaseRunMemory } from '../util/release-memory.js';

export interface DashboardOptions {
  source: DashboardSource;
  host: string;
  port: number;
  token: string;
  maxLagSeconds: number;
  nextRun: (nowMs: number) => Overview['nextRun'];
  /** The data directory as the user gave it, for the commands the page shows (undefined: the default). */
  dataDirArg?: string;
  /** With accounts: the configuration file and the account, added to the commands the page shows. */
  account?: { name: string; configArg?: string };
  /** A demo directory: no command to fill its gaps is offered (its emulator ended with the demo). */
  demo?: boolean;
  /**
   * Every account of a many-account data directory (no --account): / lists them, `/?account=NAME`
   * is that account's page, every other API route takes `account=NAME`; `source`, `account` unused.
   */
  allAccounts?: { names: string[]; sourceOf: (name: string) => Promise<DashboardSource>; configArg?: string };
  now?: () => number;
  queryTimeoutMs?: number;
  /** CSV downloads at once, and how many more may wait for a place (default 2 and 8). */
  downloads?: { running: number; waiting: number; waitMs?: number };
  /** A download whose client reads nothing for this long is cut (default 60 s). */
  stallMs?: number;
  /** DuckDB's time a download may take (default 60 s; other queries: queryTimeoutMs). */
  downloadTimeoutMs?: number;
  /** How long a browser session lasts from its opening (default 12 h). */
  sessionTtlMs?: number;
  /** Heavy API requests answered at once, and how many more may wait (default 4 and 16). */
  requests?: { running: number; waiting: number; waitMs?: number };
  /** Where to report a request that failed inside (its answer says only that it failed). */
  onError?: (err: unknown) => void;
  /** DuckDB's memory_limit for each dataset reader (default 1GB). */
  duckdbMemoryLimit?: string;
}

export interface Dashboard {
  url: string;
  /** The queries of the page's heavy requests (sessions, charts) running now, and the most so far. */
  heavy(): { inFlight: number; peak: number };
  close(): Promise<void>;
}

export { isLoopback };

export async function startDashboard(o: DashboardOptions): Promise<Dashboard> {
  const assets = loadAssets();
  const now = o.now ?? Date.now;

  /** What the page shows of one store or account. */
  interface View {
    reader: ParquetReader;
    state: StateReader;
    target: CommandTarget;
    account: { name: string; configArg?: string } | undefined;
    demo: boolean;
  }
  const openView = async (source: DashboardSource, account: View['account'], demo = false): Promise<View> => ({
    reader: await ParquetReader.open(source.parquetRoot, {
      timeoutMs: o.queryTimeoutMs ?? 10_000,
      ...(source.account !== undefined ? { account: source.account } : {}),
      ...(o.duckdbMemoryLimit ? { memoryLimit: o.duckdbMemoryLimit } : {}),
    }),
    state: new StateReader(source, now),
    // The commands the page shows run against what the dashboard was given.
    target: { dataDir: o.dataDirArg, ...(account?.configArg ? { config: account.configArg } : {}), account: account?.name },
    account,
    demo,
  });
  const all = o.allAccounts;
  // One account or data directory (as before): its view, opened now. All accounts: each one's, opened when first asked for.
  const single = all ? null : await openView(o.source, o.account, o.demo ?? false);
  const views = new Map<string, Promise<View>>();
  const viewOfAccount = (name: string): Promise<View> => {
    let v = views.get(name);
    if (!v) {
      v = all!.sourceOf(name).then((source) => openView(source, { name, ...(all!.configArg ? { configArg: all!.configArg } : {}) }));
      views.set(name, v);
      v.catch(() => views.delete(name));
    }
    return v;
  };
  // The calendar's per-day counts, read once now so that the first page load finds them cached.
  if (single) void sessionsPerDay(single.reader).catch(() => {});

  const api: Record<string, (q: URLSearchParams, res: ServerResponse, v: View) => Promise<void>> = {
    '/api/overview': async (_q, res, v) => json(res, await overview(v)),
    '/api/runs': async (_q, res, v) => json(res, { runs: (await overview(v)).runs }),
    '/api/coverage': async (_q, res, v) => {
      const reading = await v.state.read();
      json(res, { coverage: reading.snapshot?.coverage ?? [], ...(await calendarOf(v, reading)) });
    },
    '/api/charts': async (q, res, v) =>
      heavyQuery(res, async () => {
        const c = await charts(v.reader, q.get('from') ?? undefined, q.get('to') ?? undefined);
        const cal = await calendarOf(v, await v.state.read());
        json(res, { ...c, perDay: chartDays(c.perDay, cal.days, c.from, c.to) });
      }),
    '/api/sessions': async (q, res, v) => {
      const req = listRequestOf(q, { csv: false });
      await heavyQuery(res, async () => {
        const page = await querySessions(v.reader, req);
        json(res, { total: page.total, offset: page.offset, pageSize: page.pageSize, columns: askedColumns(req) ?? null, items: page.items });
      });
    },
    '/api/sessions.csv': async (q, res, v) => {
      const req = listRequestOf(q, { csv: true });
      await gated(downloads, 'CSV downloads', DOWNLOAD_RETRY_AFTER_S, res, async () => {
        const total = await countSessions(v.reader, req);
        res.statusCode = 200;
        res.setHeader('Content-Type', 'text/csv; charset=utf-8');
        res.setHeader('Content-Disposition', 'attachment; filename="sessions.csv"');
        res.setHeader('Cache-Control', 'no-store');
        res.setHeader('X-Total-Count', String(total));
        if (total > MAX_CSV_ROWS) res.setHeader('X-Truncated', `first ${MAX_CSV_ROWS} of ${total} rows`);
        await writeSessionsCsv(v.reader, req, total, (text) => writeOrWait(res, text, o.stallMs ?? 60_000), o.downloadTimeoutMs ?? 60_000);
        res.end();
      });
    },
  };

  /**
   * A page of sessions or the charts: an answer held in memory whole (a page of 1,000 sessions is
   * megabytes), so at most `requests.running` at once, that many at once cannot exhaust memory.
   */
  function heavyQuery(res: ServerResponse, run: () => Promise<void>): Promise<void> {
    return gated(queries, 'queries', QUERY_RETRY_AFTER_S, res, async () => {
      heavy.inFlight++;
      heavy.peak = Math.max(heavy.peak, heavy.inFlight);
      try {
        await run();
      } finally {
        heavy.inFlight--;
      }
    });
  }

  /** Runs `run` in a place of `gate`; others wait for one, and beyond that are told to come back (503, Retry-After). */
  async function gated(gate: RequestGate, what: string, retryAfterS: number, res: ServerResponse, run: () => Promise<void>): Promise<void> {
    const release = await gate.enter();
    if (!release) {
      res.setHeader('Retry-After', String(retryAfterS));
      return json(res, { error: `${gate.running} ${what} are running, the most at once, and others are waiting: try again in a few seconds` }, 503);
    }
    try {
      if (!res.destroyed) await run(); // else the client left while it waited
    } finally {
      release();
      afterHeavy();
    }
  }

  /** The calendar of what the state says now; the range of a run going now is not-yet, not holes. */
  async function calendarOf(v: View, reading: StateReading): Promise<CoverageCalendar> {
    const perDay = await sessionsPerDay(v.reader);
    const live = reading.liveHolder && reading.snapshot?.running ? reading.snapshot.running.runId : null;
    const row = live ? reading.snapshot?.lastRuns.find((r) => r.run_id === live) : undefined;
    const running = row?.range_from && row.range_to ? { from: String(row.range_from), to: String(row.range_to) } : null;
    return coverageCalendar(reading.snapshot?.coverage ?? [], perDay, now(), {
      target: v.target,
      noCommands: v.demo,
      running,
      anomalies: reading.snapshot?.volumeAnomalies ?? [],
      unfinished: unfinishedBackfills(reading.snapshot?.lastRuns ?? [], live),
    });
  }

  async function overview(v: View): Promise<Overview> {
    const reading = await v.state.read();
    const t = now();
    const parquetRows = reading.snapshot?.rows != null ? null : await parquetRowCount(v.reader);
    // Partitions waiting for their rewrite: the dataset (charts, the sessions list) counts otherwise than the table; say by how much.
    const waiting = reading.snapshot?.rows != null && reading.snapshot.format !== 'duckdb' && reading.snapshot.pendingPartitions.length > 0;
    const datasetRows = waiting ? await parquetRowCount(v.reader) : null;
    return buildOverview({
      reading,
      parquetRows,
      datasetRows,
      nowMs: t,
      maxLagSeconds: o.maxLagSeconds,
      nextRun: v.demo ? null : o.nextRun(t),
      account: v.account?.name ?? null,
      demo: v.demo,
      target: v.target,
    });
  }

  const sessionTtlMs = o.sessionTtlMs ?? SESSION_TTL_MS;
  const sessions = new ExpiringIds(sessionTtlMs, now, 1000, 32);
  // A download ticket is made for a live session, good for a minute and one request.
  const tickets = new ExpiringIds(60_000, now, 100, 24);
  const downloads = new RequestGate(o.downloads?.running ?? 2, o.downloads?.waiting ?? 8, o.downloads?.waitMs ?? 30_000);
  const queries = new RequestGate(o.requests?.running ?? 4, o.requests?.waiting ?? 16, o.requests?.waitMs ?? 30_000);
  // Once the heavy requests are all answered, what they allocated (answers of megabytes, DuckDB's
  // buffers freed to the allocator) is handed back, so the idle dashboard is back to its idle size
  // (docs/configuration.md "Idle memory"). Half a second after the last one: a burst releases once.
  let releaseTimer: NodeJS.Timeout | undefined;
  const afterHeavy = () => {
    if (!downloads.idle || !queries.idle) return;
    clearTimeout(releaseTimer);
    releaseTimer = setTimeout(() => void releaseRunMemory(), 500).unref();
  };
  const heavy = { inFlight: 0, peak: 0 };
  // Listening on loopback: a page on another site reaching us by a name it controls (DNS
  // rebinding) sends its own Host, refused even before the token is asked for.
  const loopbackOnly = isLoopback(o.host);

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (err instanceof ClientGoneError) return void res.destroy();
      if (res.headersSent) {
        // Part of a body sent: cut the connection, so that the client cannot take it for the whole answer.
        o.onError?.(err);
        return void res.destroy();
      }
      if (err instanceof BadRequestError) return json(res, { error: err.message }, err.status);
      if (err instanceof QueryTimeoutError) return json(res, { error: err.message }, 503);
      // The reason (paths, SQL) goes to the log only; the answer says where it is.
      o.onError?.(err);
      json(res, { error: 'the dashboard could not answer this request: the reason is in its log (standard error)' }, 500);
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    if (loopbackOnly && !isLoopback(hostOfHeader(req.headers.host))) {
      return json(res, { error: 'this dashboard answers only to localhost / 127.0.0.1 addresses' }, 403);
    }
    const presented = bearerToken(req.headers);
    if (req.method === 'POST' && url.pathname === '/api/session') {
      // The page trades the token of its address for a browser session (kept in its sessionStorage).
      if (!tokenMatches(o.token, presented)) return unauthorized(res, url.pathname);
      const s = sessions.create();
      return json(res, { session: s.id, expiresAt: new Date(s.expiresAt).toISOString(), ttlSeconds: Math.round(sessionTtlMs / 1000) });
    }
    if (req.method === 'POST' && url.pathname === '/api/download') {
      const who = access(presented);
      if (who !== 'live') return unauthorized(res, url.pathname, who === 'expired');
      return json(res, { ticket: tickets.create().id });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return json(res, { error: `${req.method} is not allowed: the dashboard is read-only (GET and HEAD only)` }, 405);
    }
    // The page and its scripts: no data in them; the page asks for a session with the token of its address.
    const asset = assets.get(url.pathname);
    if (asset) return send(res, 200, asset.body, asset.type, { 'Cache-Control': 'no-cache' }, req.method === 'HEAD');
    const who = access(presented);
    if (who !== 'live') {
      // A download the browser makes itself (a link sends no header): a one-use ticket in its address.
      const ticket = url.pathname === '/api/sessions.csv' ? url.searchParams.get('ticket') : null;
      if (tickets.check(ticket, true) !== 'live') return unauthorized(res, url.pathname, who === 'expired');
    }
    url.searchParams.delete('ticket');
    const head = req.method === 'HEAD';
    if (url.pathname === '/api/accounts') return head ? send(res, 200, '', JSON_TYPE, NO_STORE) : json(res, await accountsOverview());
    const route = api[url.pathname];
    if (!route) return json(res, { error: `no such page: ${url.pathname}` }, 404);
    const view = await viewOf(url.searchParams);
    if (head) return send(res, 200, '', JSON_TYPE, NO_STORE);
    await route(url.searchParams, res, view);
  }

  /** The view a request asks for: the one there is; with all accounts, the one its `account` names (taken out of `q`). */
  async function viewOf(q: URLSearchParams): Promise<View> {
    const name = q.get('account');
    if (single) {
      // The account shown named again (a link of the all-accounts page kept): the same view.
      if (name !== null && name === single.account?.name) q.delete('account');
      return single;
    }
    const names = all!.names;
    q.delete('account');
    if (name === null) {
      throw new BadRequestError(`this dashboard shows ${names.length} accounts: give account=NAME (one of ${names.join(', ')}); /api/accounts lists them`);
    }
    if (!names.includes(name)) {
      throw new BadRequestError(`no account ${JSON.stringify(name)} here; the accounts are: ${names.join(', ')}`, 404);
    }
    return viewOfAccount(name);
  }

  /** The all-accounts page's rows (null: this dashboard shows one account or data directory). */
  async function accountsOverview(): Promise<{ accounts: AccountRow[] | null; readAt: string }> {
    const readAt = new Date(now()).toISOString();
    if (!all) return { accounts: null, readAt };
    const rows: AccountRow[] = [];
    for (const name of all.names) rows.push(accountRow(name, await overview(await viewOfAccount(name))));
    return { accounts: rows, readAt };
  }

  /** What an `Authorization: Bearer …` value opens. */
  function access(presented: string | null): 'live' | 'expired' | 'unknown' {
    return tokenMatches(o.token, presented) ? 'live' : sessions.check(presented);
  }

  return {
    url: await listen(server, o.port, o.host),
    heavy: () => ({ ...heavy }),
    async close() {
      clearTimeout(releaseTimer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      single?.reader.close();
      for (const v of views.values()) await v.then((x) => x.reader.close(), () => {});
    },
  };
}

/** Seconds a download or a query turned away is told to wait (Retry-After). */
const DOWNLOAD_RETRY_AFTER_S = 5;
const QUERY_RETRY_AFTER_S = 2;

