/**
 * A store written by an earlier release (test/fixtures/old-stores: the last builds of schema 1 and
 * 2, each format) is read by every read command of this one — status, status --json, status
 * --check, sessions (DuckDB and Parquet), the dashboard's API, the scheduler's first /healthz —
 * with sensible figures, and left unchanged byte for byte: reading never migrates (the next export
 * or backfill does).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { withEmulator } from '../helpers/emulator-fixture.js';
import { writeAccountsConfig } from '../helpers/accounts-config.js';
import { REPO_ROOT, runCli, startCli, waitFor } from '../helpers/cli.js';
import { startDashboardCli } from '../dashboard/fixture.js';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'old-stores');
// As make.mjs wrote them: 2026-01-05 – 2026-01-08, 143 sessions, two backfills.
const SESSIONS = 143;
const CASES: Array<[string, 'both' | 'duckdb' | 'parquet']> = [
  ['schema1', 'both'],
  ['schema1', 'parquet'],
  ['schema2', 'both'],
  ['schema2', 'duckdb'],
  ['schema2', 'parquet'],
];

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function unpack(archive: string, format: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'session-etl-old-store-'));
  dirs.push(root);
  execFileSync('tar', ['-xzf', join(FIXTURES, `${archive}.tar.gz`), '-C', root, format]);
  return join(root, format);
}

/** Every file and directory under `dir` with its content's hash (directories: 'dir'), sorted. */
async function fingerprint(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        out[relative(dir, p)] = 'dir';
        await walk(p);
      } else {
        out[relative(dir, p)] = `${(await stat(p)).size}:${createHash('sha256').update(await readFile(p)).digest('hex')}`;
      }
    }
  };
  await walk(dir);
  return out;
}

const env = { SESSION_ETL_LOG_LEVEL: 'error' };

describe.each(CASES)('a %s store of format %s', (archive, format) => {
  it('every read command reads it, and it stays byte for byte as it was', async () => {
    const data = await unpack(archive, format);
    const before = await fingerprint(data);

    const status = await runCli(['status', '--data-dir', data], env);
    expect(status.stderr).toBe('');
    expect(status.code, status.stdout).toBe(0);
    expect(status.stdout).toMatch(/^checkpoint\s+2026-01-08T00:00:00Z/m);
    expect(status.stdout).toMatch(/^coverage\s+2026-01-05T00:00:00Z – 2026-01-08T00:00:00Z$/m);
    expect(status.stdout).toMatch(new RegExp(`^rows\\s+${SESSIONS}\\b`, 'm'));
    expect(status.stdout).toMatch(/earlier release \(schema [12]\): read as it is; the next export or backfill upgrades it/);
    expect(status.stdout.match(/^ {2}\S+ {2}backfill succeeded/gm)).toHaveLength(2);

    const json = await runCli(['status', '--data-dir', data, '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const s = JSON.parse(json.stdout) as { rows: number; coverageHoles: unknown[]; lastRuns: unknown[]; partitions: number };
    expect(s).toMatchObject({ rows: SESSIONS, coverageHoles: [], partitions: format === 'duckdb' ? 0 : 3 });
    expect(s.lastRuns).toHaveLength(2);

    const check = await runCli(['status', '--data-dir', data, '--check', '--max-lag', '3650d'], env);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(/^OK: checkpoint 2026-01-08T00:00:00Z .*last run succeeded/);

    for (const source of format === 'both' ? ['duckdb', 'parquet'] : [format]) {
      const list = await runCli(['sessions', '--data-dir', data, '--source', source, '--output', 'json', '--page-size', '5'], env);
      expect(list.code, list.stderr).toBe(0);
      const page = JSON.parse(list.stdout) as { items?: unknown[]; totalCount?: number };
      expect(page.items ?? page, list.stdout).toHaveLength(5);
    }

    const dash = await startDashboardCli(['--data-dir', data], env);
    try {
      const o = await dash.fetch('/api/overview');
      expect(o.status).toBe(200);
      const overview = (await o.json()) as { totalSessions: number; checkpoint: string; runs: unknown[] };
      expect(overview).toMatchObject({ totalSessions: SESSIONS, checkpoint: '2026-01-08T00:00:00Z' });
      expect(overview.runs).toHaveLength(2);
      const list = await dash.fetch('/api/sessions?pageSize=5');
      expect(list.status, await list.clone().text()).toBe(200);
    } finally {
      await dash.stop();
    }

    // The scheduler's /healthz before its first run (its cron never fires here).
    const sched = startCli(['schedule', '--cron', '0 0 1 1 *', '--http-port', '0', '--data-dir', data], {
      ...env,
      REPORTING_URL: 'http://127.0.0.1:9/',
      REPORTING_API_KEY: 'unused-key-0000',
      SESSION_ETL_START_DATE: '2026-01-05',
    });
    try {
      let base = '';
      await waitFor(() => {
        base = /^Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/m.exec(sched.output())?.[1] ?? '';
        if (sched.exitCode !== null) throw new Error(`the scheduler exited ${sched.exitCode}: ${sched.output()}`);
        return base !== '';
      }, 30_000, 'the metrics URL');
      const h = await fetch(`${base}/healthz`);
      const body = (await h.json()) as { healthy: boolean; reasons: string[] };
      // Unhealthy only because the fixture's checkpoint is old.
      expect(body.reasons, JSON.stringify(body)).toEqual([expect.stringMatching(/^checkpoint 2026-01-08T00:00:00Z is .* behind now/)]);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(new RegExp(`^session_etl_stored_sessions ${SESSIONS}$`, 'm'));
    } finally {
      sched.kill('SIGTERM');
      await sched.result;
    }

    expect(await fingerprint(data)).toEqual(before);
  }, 180_000);
});

describe('verify on a store of an earlier release', () => {
  it('records what it found in the store, so it upgrades it first, as an export does; status then names no older schema', async () => {
    // make.mjs's emulator: the same sessions.
    const FROM = Date.parse('2026-01-05T00:00:00Z') / 1000;
    const NOW = Date.parse('2026-01-20T00:00:00Z') / 1000;
    await withEmulator({ seed: 7, from: FROM - 86_400, to: NOW, now: NOW, sessionsPerDay: 40, apiKey: 'old-store-key' }, async (emu) => {
      const data = await unpack('schema1', 'both');
      const v = await runCli(['verify', '--data-dir', data, '--from', '2026-01-05', '--to', '2026-01-08'], { ...env, REPORTING_URL: emu.url, REPORTING_API_KEY: 'old-store-key' });
      expect(v.code, v.stderr).toBe(0);
      expect(v.stdout).toMatch(/the store equals the source/);
      expect(v.stdout).toMatch(new RegExp(`${SESSIONS} sessions from the source, ${SESSIONS} stored`));
      const status = await runCli(['status', '--data-dir', data], env);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).not.toMatch(/earlier release/);
      expect(status.stdout).toMatch(/^last verified\s+2026-/m);
    });
  }, 120_000);
});

describe('a many-account data directory of the layout before schema 3 (test/fixtures/legacy-accounts)', () => {
  it.each(['both', 'parquet'])('format %s: status and status --check read each account in its own old store, and leave every byte', async (format) => {
    const root = await mkdtemp(join(tmpdir(), 'session-etl-old-store-'));
    dirs.push(root);
    execFileSync('tar', ['-xzf', join(REPO_ROOT, 'test', 'fixtures', 'legacy-accounts', 'legacy-accounts.tar.gz'), '-C', root, format]);
    const data = join(root, format);
    const config = join(root, 'config.json');
    await writeAccountsConfig(config, { dataDir: data }, { acme: 'K', globex: 'K', initech: 'K' });
    const before = await fingerprint(data);

    const status = await runCli(['status', '--config', config, '--json'], { ...env, K: 'unused-key-0000' });
    expect(status.code, status.stderr).toBe(0);
    const s = JSON.parse(status.stdout) as { accounts: Array<{ account: string; note: string | null; status: { checkpoint: string; rows: number | null; lastRuns: unknown[]; olderSchema: number | null } }> };
    for (const a of s.accounts) {
      expect(a.note, a.account).toMatch(/layout before schema 3/);
      expect(a.status).toMatchObject({ checkpoint: '2026-01-08T00:00:00Z', olderSchema: 2 });
      expect(a.status.lastRuns).toHaveLength(2);
      expect(a.status.rows).toBeGreaterThan(0);
    }
    const check = await runCli(['status', '--config', config, '--check', '--max-lag', '3650d'], { ...env, K: 'unused-key-0000' });
    expect(check.stdout).toBe('OK: 3 accounts healthy\n');
    expect(check.code).toBe(0);
    expect(await fingerprint(data)).toEqual(before);
  }, 120_000);
});
