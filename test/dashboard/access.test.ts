/**
 * Who may read the dashboard, over real HTTP against the real `session-etl dashboard` process: a
 * token on every request, even on loopback (another local user must not read customer data); a
 * browser trades it for a session id the page sends as a header (no cookie: a host's cookies reach
 * every port of it), which expires; downloads take a one-use ticket; answers that fail say so
 * without paths or SQL.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, waitFor } from '../helpers/cli.js';
import { startDashboardCli, type RunningDashboard } from './fixture.js';

let root: string;
let dataDir: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'session-etl-dashboard-access-'));
  dataDir = join(root, 'data');
  await mkdir(dataDir);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** POST /api/session with `bearer`: the answer and its body. */
async function openSession(d: RunningDashboard, bearer: string): Promise<{ res: Response; body: any }> {
  const res = await fetch(new URL('api/session', d.url), { method: 'POST', headers: { Authorization: `Bearer ${bearer}` } });
  return { res, body: await res.json() };
}

async function withDashboards<T>(n: number, fn: (d: RunningDashboard[]) => Promise<T>, args: string[] = ['--data-dir', dataDir]): Promise<T> {
  const ds: RunningDashboard[] = [];
  try {
    for (let i = 0; i < n; i++) ds.push(await startDashboardCli(args, {}));
    return await fn(ds);
  } finally {
    for (const d of ds) await d.stop();
  }
}

describe('dashboard access', () => {
  it('every request needs the token, on loopback too: a new one each start, printed once in the first line and nowhere else', async () => {
    await withDashboards(2, async ([a, b]) => {
      expect(a!.printed).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{32}$/);
      expect(b!.token).not.toBe(a!.token);
      for (const path of ['api/overview', 'api/sessions.csv', 'api/coverage', 'api/runs', 'api/nothing']) {
        const res = await fetch(new URL(path, a!.url));
        expect(res.status, path).toBe(401);
        expect(await res.text()).toMatch(/access token is required/);
      }
      // The page itself holds no data: it asks for a session with the token of its address.
      const page = await fetch(a!.url);
      expect(page.status).toBe(200);
      expect(page.headers.get('set-cookie')).toBeNull();
      expect((await fetch(new URL('api/overview', a!.url), { headers: { Authorization: `Bearer ${b!.token}` } })).status).toBe(401);
      expect((await a!.fetch('api/overview')).status).toBe(200);
      expect((await openSession(a!, `${a!.token}x`)).res.status).toBe(401);
      expect((await openSession(a!, b!.token)).res.status).toBe(401);
      // The token in an address opens nothing by itself (no redirect, no cookie).
      const inAddress = await fetch(new URL(`api/overview?token=${a!.token}`, a!.url), { redirect: 'manual' });
      expect(inAddress.status).toBe(401);
      expect(inAddress.headers.get('set-cookie')).toBeNull();
    });
    // Only on the first line of stdout; never on stderr, never again.
    const d = await startDashboardCli(['--data-dir', dataDir], {});
    await d.fetch('api/nothing');
    await fetch(new URL(`?token=${d.token}`, d.url), { redirect: 'manual' });
    await openSession(d, d.token);
    const r = await d.stop();
    expect(r.stdout.split(d.token)).toHaveLength(2);
    expect(r.stdout.startsWith(`Dashboard: ${d.printed}\n`)).toBe(true);
    expect(r.stderr).not.toContain(d.token);
  });

  it('the token traded for a session id (never the token) sent as a header; no cookie set or accepted; one dashboard\'s session opens nothing on another', async () => {
    await withDashboards(2, async ([a, b]) => {
      const { res, body } = await openSession(a!, a!.token);
      expect(res.status).toBe(200);
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(body.session).toMatch(/^[A-Za-z0-9_-]{40,}$/);
      expect(body.session).not.toContain(a!.token);
      expect(body.ttlSeconds).toBe(12 * 3600);
      expect(Date.parse(body.expiresAt) - Date.now()).toBeGreaterThan(12 * 3600_000 - 60_000);
      const withSession = (d: RunningDashboard, path: string, headers: Record<string, string>) => fetch(new URL(path, d.url), { headers });
      for (const path of ['api/overview', 'api/coverage', 'api/sessions?pageSize=5']) {
        const r = await withSession(a!, path, { Authorization: `Bearer ${body.session}` });
        expect(r.status, path).toBe(200);
        expect(r.headers.get('set-cookie'), path).toBeNull();
      }
      expect((await withSession(b!, 'api/overview', { Authorization: `Bearer ${body.session}` })).status).toBe(401);
      // The same id as a cookie (by any name) opens nothing: the server reads no cookie.
      const port = new URL(a!.url).port;
      for (const cookie of [`session_etl_dashboard_${port}=${body.session}`, `session_etl_dashboard=${body.session}`, `session_etl_dashboard_${port}=%E0%A4%A`]) {
        expect((await withSession(a!, 'api/overview', { Cookie: cookie })).status, cookie).toBe(401);
      }
      // A malformed header: 401, not 500 and a stack trace.
      for (const auth of ['Bearer', 'Bearer %E0%A4%A', 'Basic abc', `Bearer ${body.session} x`]) {
        expect((await withSession(a!, 'api/overview', { Authorization: auth })).status, auth).toBe(401);
      }
      expect(a!.output()).not.toMatch(/URIError|TypeError/);
    });
  });

  it('a browser session ends after --session-ttl: 401 saying it expired; the token opens a new one', async () => {
    await withDashboards(
      1,
      async ([a]) => {
        const { body } = await openSession(a!, a!.token);
        expect(body.ttlSeconds).toBe(2);
        const get = () => fetch(new URL('api/overview', a!.url), { headers: { Authorization: `Bearer ${body.session}` } });
        expect((await get()).status).toBe(200);
        // Waits for the clock, not for the server: once past its end, the session is refused.
        await waitFor(() => Date.now() > Date.parse(body.expiresAt) + 50, 10_000, 'the session to reach its end');
        const late = await get();
        expect(late.status).toBe(401);
        expect(((await late.json()) as { error: string }).error).toMatch(/session of the dashboard has expired: open the address the dashboard printed/);
        const again = await openSession(a!, a!.token);
        expect((await fetch(new URL('api/overview', a!.url), { headers: { Authorization: `Bearer ${again.body.session}` } })).status).toBe(200);
      },
      ['--data-dir', dataDir, '--session-ttl', '2s'],
    );
  });

  it('a CSV download with a one-use ticket of a live session: once, then 401; no ticket, or a made-up one, 401', async () => {
    await withDashboards(1, async ([a]) => {
      const { body } = await openSession(a!, a!.token);
      const ticketOf = async (bearer: string) => fetch(new URL('api/download', a!.url), { method: 'POST', headers: { Authorization: `Bearer ${bearer}` } });
      expect((await ticketOf('nothing-of-ours')).status).toBe(401);
      const { ticket } = (await (await ticketOf(body.session)).json()) as { ticket: string };
      const csv = (t: string) => fetch(new URL(`api/sessions.csv?attributeNames=id&ticket=${t}`, a!.url));
      expect((await csv(`${ticket}x`)).status).toBe(401);
      const first = await csv(ticket);
      expect(first.status).toBe(200);
      expect(await first.text()).toMatch(/^id\r\n/);
      expect((await csv(ticket)).status).toBe(401);
      // A ticket opens the download only, nothing else.
      const other = (await (await ticketOf(body.session)).json()) as { ticket: string };
      expect((await fetch(new URL(`api/overview?ticket=${other.ticket}`, a!.url))).status).toBe(401);
    });
  });

  it('an answer that fails says so in a line; the paths and SQL of the reason go to the log only', async () => {
    const broken = join(root, 'broken');
    await mkdir(join(broken, 'parquet', 'sessions', 'date=2026-01-01'), { recursive: true });
    await writeFile(join(broken, 'state.json'), '{"version": 1, "this is": "not a snapshot"}');
    await writeFile(join(broken, 'parquet', 'sessions', 'date=2026-01-01', 'part-0.parquet'), 'not parquet at all');
    await withDashboards(1, async ([a]) => {
      for (const path of ['api/overview', 'api/charts']) {
        const res = await a!.fetch(path);
        expect(res.status, path).toBe(500);
        const body = await res.text();
        expect(body).toMatch(/could not answer this request: the reason is in its log/);
        expect(body).not.toContain(broken);
        expect(body).not.toMatch(/SELECT|read_parquet|\.parquet|state\.json/);
      }
      expect(a!.output()).toContain(join(broken, 'state.json'));
    }, ['--data-dir', broken]);
  });

  it('off loopback: a fixed token is required (a private file or the environment), never printed', async () => {
    const open = await runCli(['dashboard', '--port', '0', '--host', '0.0.0.0', '--data-dir', dataDir]);
    expect(open.code).toBe(2);
    expect(open.stderr).toMatch(/SESSION_ETL_DASHBOARD_TOKEN/);
    const token = 'a'.repeat(12) + 'b'.repeat(12);
    const file = join(root, 'token');
    await writeFile(file, token + '\n', { mode: 0o644 });
    await chmod(file, 0o644);
    const loose = await runCli(['dashboard', '--port', '0', '--host', '0.0.0.0', '--token-file', file, '--data-dir', dataDir]);
    expect(loose.code).toBe(2);
    expect(loose.stderr).toMatch(/can be read by others.*chmod 600/);
    await chmod(file, 0o600);

    const d = await startDashboardCli(['--host', '0.0.0.0', '--token-file', file, '--data-dir', dataDir], {}, token);
    try {
      const url = d.url.replace('0.0.0.0', '127.0.0.1');
      expect(d.printed).toBe(d.url);
      expect((await fetch(`${url}api/overview`)).status).toBe(401);
      expect((await fetch(`${url}api/overview`, { headers: { Authorization: `Bearer ${token}x` } })).status).toBe(401);
      expect((await fetch(`${url}api/overview`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
      const session = (await (await fetch(`${url}api/session`, { method: 'POST', headers: { Authorization: `Bearer ${token}` } })).json()) as { session: string };
      expect(session.session).not.toContain(token);
      expect((await fetch(`${url}api/overview`, { headers: { Authorization: `Bearer ${session.session}` } })).status).toBe(200);
    } finally {
      // Stopped by SIGTERM: 143, like every command (README "Exit codes").
      expect((await d.stop()).code).toBe(143);
    }
    expect(d.output()).not.toContain(token);
  });
});
