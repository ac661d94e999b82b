/**
 * Who may read the dashboard, over real HTTP against the real `session-etl dashboard` process: a
 * token on every request, even on loopback (another local user must not read customer data); a
 * browser trades it once for a session cookie of its own port that never holds the token; answers
 * that fail say so without paths or SQL.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
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

/** The `name=value` of a Set-Cookie header, and its attributes. */
function cookieOf(res: Response): { name: string; value: string; attributes: string[] } {
  const [pair, ...attributes] = (res.headers.get('set-cookie') ?? '').split(';').map((p) => p.trim());
  const eq = pair!.indexOf('=');
  return { name: pair!.slice(0, eq), value: pair!.slice(eq + 1), attributes };
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
      for (const path of ['api/overview', 'api/sessions.csv', 'api/coverage', '']) {
        const res = await fetch(new URL(path, a!.url));
        expect(res.status, path).toBe(401);
        expect(await res.text()).toMatch(/access token is required/);
      }
      expect((await fetch(new URL('api/overview', a!.url), { headers: { Authorization: `Bearer ${b!.token}` } })).status).toBe(401);
      expect((await a!.fetch('api/overview')).status).toBe(200);
      expect((await fetch(new URL(`?token=${a!.token}x`, a!.url), { redirect: 'manual' })).status).toBe(401);
    });
    // Only on the first line of stdout; never on stderr, never again.
    const d = await startDashboardCli(['--data-dir', dataDir], {});
    await d.fetch('api/nothing');
    await fetch(new URL(`?token=${d.token}`, d.url), { redirect: 'manual' });
    const r = await d.stop();
    expect(r.stdout.split(d.token)).toHaveLength(2);
    expect(r.stdout.startsWith(`Dashboard: ${d.printed}\n`)).toBe(true);
    expect(r.stderr).not.toContain(d.token);
  });

  it('?token= once: a session cookie named after the port, holding a random id (never the token), HttpOnly, SameSite=Strict; the token leaves the address', async () => {
    await withDashboards(2, async ([a, b]) => {
      const once = await fetch(a!.printed, { redirect: 'manual' });
      expect(once.status).toBe(303);
      expect(once.headers.get('location')).toBe('/');
      const c = cookieOf(once);
      expect(c.name).toBe(`session_etl_dashboard_${new URL(a!.url).port}`);
      expect(c.value).not.toContain(a!.token);
      expect(c.value).toMatch(/^[A-Za-z0-9_-]{40,}$/);
      expect(c.attributes).toEqual(expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Strict']));
      expect((await fetch(new URL('api/overview', a!.url), { headers: { Cookie: `${c.name}=${c.value}` } })).status).toBe(200);

      // The second dashboard on the same host: its own cookie beside the first (a browser sends both to either port).
      const c2 = cookieOf(await fetch(b!.printed, { redirect: 'manual' }));
      expect(c2.name).not.toBe(c.name);
      const both = `${c.name}=${c.value}; ${c2.name}=${c2.value}`;
      expect((await fetch(new URL('api/overview', a!.url), { headers: { Cookie: both } })).status).toBe(200);
      expect((await fetch(new URL('api/overview', b!.url), { headers: { Cookie: both } })).status).toBe(200);
      // One dashboard's session opens nothing on the other.
      expect((await fetch(new URL('api/overview', b!.url), { headers: { Cookie: `${c2.name}=${c.value}` } })).status).toBe(401);

      // On any path: the token is taken out, the rest of the address kept.
      const api = await fetch(new URL(`api/sessions?pageSize=5&token=${a!.token}`, a!.url), { redirect: 'manual' });
      expect(api.status).toBe(303);
      expect(api.headers.get('location')).toBe('/api/sessions?pageSize=5');
    });
  });

  it('a malformed cookie gets 401, not 500 and a stack trace', async () => {
    await withDashboards(1, async ([a]) => {
      const port = new URL(a!.url).port;
      for (const cookie of [`session_etl_dashboard_${port}=%E0%A4%A`, 'session_etl_dashboard=%E0%A4%A', `session_etl_dashboard_${port}=${a!.token}`]) {
        const res = await fetch(new URL('api/overview', a!.url), { headers: { Cookie: cookie } });
        expect(res.status, cookie).toBe(401);
      }
      expect(a!.output()).not.toMatch(/URIError|at decodeURIComponent/);
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
      const c = cookieOf(await fetch(`${url}?token=${token}`, { redirect: 'manual' }));
      expect(c.value).not.toContain(token);
      expect((await fetch(`${url}api/overview`, { headers: { Cookie: `${c.name}=${c.value}` } })).status).toBe(200);
    } finally {
      // Stopped by SIGTERM: 143, like every command (README "Exit codes").
      expect((await d.stop()).code).toBe(143);
    }
    expect(d.output()).not.toContain(token);
  });
});
