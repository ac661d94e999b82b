/**
 * A re-export of unchanged data rewrites no day (issue 38), through the built CLI: a many-account
 * store (formats both and parquet) and a dataset in a bucket (a real S3 server on loopback, every
 * request it answered recorded). A backfill run twice over the same range: the second writes no
 * day file, locally or in the bucket, and the stored rows keep their extracted_at.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeAccountsConfig } from '../helpers/accounts-config.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { useS3 } from '../helpers/s3-server.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 6 * D;
const TO = FROM + 3 * D;

const fx = useEmulator(
  {
    seed: 7,
    from: FROM - D,
    to: NOW,
    now: NOW,
    sessionsPerDay: 40,
    accounts: [
      { name: 'acme', apiKey: 'unchanged-key-acme-1', seed: 71, sessionsPerDay: 30 },
      { name: 'globex', apiKey: 'unchanged-key-globex-1', seed: 72, sessionsPerDay: 20 },
    ],
  },
  { prefix: 'session-etl-unchanged-cli-' },
);
const s3 = useS3({ buckets: ['lake'] });

/** Every local Parquet day file: inode, mtime and a hash of its bytes, by path under the dataset. */
async function dayFiles(root: string): Promise<Map<string, { ino: number; mtimeMs: number; sha: string }>> {
  const out = new Map<string, { ino: number; mtimeMs: number; sha: string }>();
  for (const day of (await readdir(root)).sort()) {
    for (const f of await readdir(join(root, day))) {
      const st = await stat(join(root, day, f));
      out.set(`${day}/${f}`, { ino: st.ino, mtimeMs: st.mtimeMs, sha: createHash('sha256').update(await readFile(join(root, day, f))).digest('hex') });
    }
  }
  return out;
}

interface Summary {
  sessions: { new: number; updated: number; unchanged: number; written: number };
  files: { partitionsWritten: string[] };
}

describe.each(['both', 'parquet'] as const)('many accounts, format %s', (format) => {
  it('a backfill run twice rewrites no day and keeps every extracted_at', async () => {
    const root = await fx.tempDir();
    const data = join(root, 'data');
    const config = join(root, 'config.json');
    await writeAccountsConfig(config, { dataDir: data, format, reportingUrl: fx.emu.url }, { acme: 'A', globex: 'G' });
    const env = { A: 'unchanged-key-acme-1', G: 'unchanged-key-globex-1' };
    const args = ['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'error'];
    const first = await runCli(args, env);
    expect(first.code, first.stderr).toBe(0);
    const dataset = join(data, 'parquet', 'sessions');
    const files = await dayFiles(dataset);
    expect(files.size).toBeGreaterThanOrEqual(3);
    const stored = format === 'both' ? await readDuckDbSessions(data) : [];

    const again = await runCli(args, env);
    expect(again.code, again.stderr).toBe(0);
    const out = JSON.parse(again.stdout) as { accounts: Array<{ account: string; summary: Summary }> };
    expect(out.accounts.map((a) => a.account).sort()).toEqual(['acme', 'globex']);
    for (const a of out.accounts) {
      expect(a.summary.sessions, a.account).toMatchObject({ new: 0, updated: 0, written: 0 });
      expect(a.summary.sessions.unchanged, a.account).toBeGreaterThan(0);
      expect(a.summary.files.partitionsWritten, a.account).toEqual([]);
    }
    expect(await dayFiles(dataset)).toEqual(files);
    if (format === 'both') expect(await readDuckDbSessions(data)).toEqual(stored);
  });
});

describe.each(['both', 'parquet'] as const)('the dataset in a bucket, format %s', (format) => {
  it('a backfill run twice puts no day file', async () => {
    const root = await fx.tempDir();
    const url = `s3://lake/unchanged-${format}/sessions`;
    const env = { ...fx.env(join(root, 'data')), ...s3.env };
    const args = ['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--format', format, '--parquet-url', url, '--json', '--log-level', 'error'];
    const first = await runCli(args, env);
    expect(first.code, first.stderr).toBe(0);
    const dayWrites = () => s3.requests.filter((r) => r.method !== 'GET' && r.method !== 'HEAD' && decodeURIComponent(r.path).includes(`/unchanged-${format}/sessions/date=`));
    expect(dayWrites().length).toBeGreaterThan(0);
    const before = dayWrites().length;

    const again = await runCli(args, env);
    expect(again.code, again.stderr).toBe(0);
    const s = JSON.parse(again.stdout) as Summary;
    expect(s.sessions).toMatchObject({ new: 0, updated: 0, written: 0 });
    expect(s.sessions.unchanged).toBeGreaterThan(0);
    expect(s.files.partitionsWritten).toEqual([]);
    expect(dayWrites().slice(before)).toEqual([]);
  });
});
