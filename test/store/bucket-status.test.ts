/**
 * `status` of a Parquet-only store whose dataset is in a bucket (s3rver on loopback) counts its rows in
 * the day files, as it does for a local dataset: on the machine that wrote it, on a fresh one, and
 * in the many-account total. Before, the state's own count (none for format parquet) said 0.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeAccountsConfig } from '../helpers/accounts-config.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';
import { useS3 } from '../helpers/s3-server.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 6 * D;
const TO = FROM + 3 * D;

const fx = useEmulator({ seed: 41, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 50 }, { prefix: 'session-etl-bucket-status-' });
const s3 = useS3({ buckets: ['lake'] });

describe('status of a Parquet-only store with its dataset in a bucket', () => {
  it('counts the rows of its day files, on the machine that wrote them and on a fresh one', async () => {
    const root = await fx.tempDir();
    const url = 's3://lake/one';
    const env = (dir: string) => ({ ...fx.env(dir), ...s3.env });
    const b = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--json', '--log-level', 'error'], env(join(root, 'writer')));
    expect(b.code, b.stderr).toBe(0);
    const stored = (JSON.parse(b.stdout) as { sessions: { new: number } }).sessions.new;
    expect(stored).toBeGreaterThan(100);
    for (const dir of ['writer', 'fresh']) {
      const st = await runCli(['status', '--parquet-url', url, '--json'], env(join(root, dir)));
      expect(st.code, st.stderr).toBe(0);
      expect(JSON.parse(st.stdout)).toMatchObject({ format: 'parquet', rows: stored });
      const text = await runCli(['status', '--parquet-url', url], env(join(root, dir)));
      expect(text.stdout).toMatch(new RegExp(`^rows\\s+${stored}$`, 'm'));
    }
  });

  it('lists the bucket\'s day files once, and gives their number and size from that listing (on the machine that wrote them and on a fresh one)', async () => {
    const root = await fx.tempDir();
    const url = 's3://lake/listed';
    const env = (dir: string) => ({ ...fx.env(join(root, dir)), ...s3.env });
    const b = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', 'parquet', '--parquet-url', url, '--log-level', 'error'], env('data'));
    expect(b.code, b.stderr).toBe(0);
    const days = s3.requests.filter((r) => r.method === 'PUT' && decodeURIComponent(r.path).includes('/listed/date='));
    for (const dir of ['data', 'fresh']) {
      const from = s3.requests.length;
      const st = await runCli(['status', '--parquet-url', url, '--json'], env(dir));
      expect(st.code, st.stderr).toBe(0);
      const lists = s3.requests.slice(from).filter((r) => r.method === 'GET' && /[?&]list-type=2/.test(r.path) && decodeURIComponent(r.path).includes('prefix=listed/date='));
      expect(lists, dir).toHaveLength(1);
      const s = JSON.parse(st.stdout) as { partitions: number; bytes: { parquet: number } };
      expect(s.partitions).toBe(new Set(days.map((r) => r.path)).size);
      expect(s.bytes.parquet).toBeGreaterThan(0);
    }
  });

  it('many accounts: each account its own rows, and the total theirs', async () => {
    const root = await fx.tempDir();
    const config = join(root, 'config.json');
    await writeAccountsConfig(config, { dataDir: join(root, 'data'), format: 'parquet', parquetUrl: 's3://lake/many' }, { acme: 'K', globex: 'K' });
    const env = { ...s3.env, REPORTING_URL: fx.emu.url, K: fx.emu.apiKey };
    const r = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'error'], env);
    expect(r.code, r.stderr).toBe(0);
    const written = (JSON.parse(r.stdout) as { accounts: Array<{ account: string; summary: { sessions: { new: number } } }> }).accounts;
    const st = await runCli(['status', '--config', config, '--json'], env);
    expect(st.code, st.stderr).toBe(0);
    const s = JSON.parse(st.stdout) as { accounts: Array<{ account: string; status: { rows: number } }>; total: { rows: number } };
    const byAccount = Object.fromEntries(written.map((a) => [a.account, a.summary.sessions.new]));
    expect(Object.fromEntries(s.accounts.map((a) => [a.account, a.status.rows]))).toEqual(byAccount);
    expect(s.total.rows).toBe(byAccount.acme! + byAccount.globex!);
    expect(s.total.rows).toBeGreaterThan(100);
  });
});
