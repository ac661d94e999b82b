/**
 * What the dashboard's and the scheduler's HTTP servers refuse and bound, over real HTTP: on loopback,
 * /healthz and /metrics answer only to loopback names, as the dashboard does (DNS rebinding); many
 * heavy requests at once (pages of 1,000 sessions) run at most a few at a time, counted in flight.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceOfDataDir } from '../../src/dashboard/data-source.js';
import { startDashboard, type Dashboard } from '../../src/dashboard/server.js';
import { startMonitoringServer } from '../../src/monitoring/http-server.js';
import { runCli } from '../helpers/cli.js';

const TOKEN = 'bounds-test-token-0123456789';

let root: string;
let dataDir: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'session-etl-dashboard-bounds-'));
  dataDir = join(root, 'demo');
  const made = await runCli(['demo', '--days', '4', '--sessions-per-day', '600', '--data-dir', dataDir, '--no-progress', '--json']);
  if (made.code !== 0) throw new Error(`the demo exited ${made.code}: ${made.stderr}`);
}, 180_000);
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A GET with the Host header given (fetch() cannot set it). */
function getWithHost(url: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { ...headers, Host: host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('host checks', () => {
  it('the scheduler\'s /healthz and /metrics on loopback answer only to loopback names; on another address, to any', async () => {
    const make = (host: string) =>
      startMonitoringServer({
        host,
        port: 0,
        metrics: async () => ({ body: 'up 1\n', contentType: 'text/plain; version=0.0.4' }),
        health: () => ({ healthy: true, reasons: [] }) as never,
      });
    const local = await make('127.0.0.1');
    try {
      const port = new URL(local.url).port;
      for (const path of ['/healthz', '/metrics']) {
        for (const host of ['evil.example', `evil.example:${port}`, 'rebind.attacker.test', '10.0.0.1']) {
          const r = await getWithHost(`${local.url}${path}`, host);
          expect(r.status, `${path} Host: ${host}`).toBe(403);
          expect(r.body).toMatch(/answers only to localhost/);
        }
        for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost']) {
          expect((await getWithHost(`${local.url}${path}`, host)).status, `${path} Host: ${host}`).toBe(200);
        }
      }
    } finally {
      await local.close();
    }
    // Listening on every address (a pod's probes use its IP): any Host.
    const open = await make('0.0.0.0');
    try {
      const url = open.url.replace('0.0.0.0', '127.0.0.1');
      expect((await getWithHost(`${url}/healthz`, '10.1.2.3:9464')).status).toBe(200);
    } finally {
      await open.close();
    }
  });
});

describe('heavy requests at once', () => {
  let dash: Dashboard;
  beforeAll(async () => {
    dash = await startDashboard({ source: sourceOfDataDir(dataDir), host: '127.0.0.1', port: 0, token: TOKEN, maxLagSeconds: 86_400, nextRun: () => null, demo: true });
  });
  afterAll(async () => {
    await dash?.close();
  });

  it('60 pages of 1,000 sessions at once: at most 4 queries in flight; each answered whole, or 503 with Retry-After', async () => {
    const answers = await Promise.all(
      Array.from({ length: 60 }, () =>
        fetch(new URL('api/sessions?pageSize=1000', dash.url), { headers: { Authorization: `Bearer ${TOKEN}` } }).then(async (r) => ({
          status: r.status,
          retryAfter: r.headers.get('retry-after'),
          body: (await r.json()) as { items?: unknown[]; error?: string },
        })),
      ),
    );
    expect(dash.heavy()).toEqual({ inFlight: 0, peak: 4 });
    const ok = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 503);
    expect(ok.length + busy.length).toBe(60);
    // 4 running and 16 waiting when they arrived together: at least those are answered.
    expect(ok.length).toBeGreaterThanOrEqual(20);
    for (const a of ok) expect(a.body.items).toHaveLength(1000);
    for (const a of busy) {
      expect(a.retryAfter).toBe('2');
      expect(a.body.error).toMatch(/queries are running, the most at once.*try again in a few seconds/);
    }
    // The page's light requests are not held behind them.
    expect((await fetch(new URL('api/overview', dash.url), { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });
});
