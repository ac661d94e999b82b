/**
 * First-use friction (issue 13): what a new user meets in the first minutes — output cut by a
 * pager, --version, did-you-mean, a range in the future, the `sessions` table and flags.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, constants, existsSync, openSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/run.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { baseEnv, BIN, REPO_ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { parseCsvWithPython } from '../helpers/python-csv.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;
const TO = FROM + 3 * D;
const fx = useEmulator({ seed: 13, from: FROM, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-first-use-' });
let dataDir: string;
const dirs: string[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'session-etl-first-use-'));
  dirs.push(dataDir);
  await runBackfill({ reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', from: FROM, to: TO, now: () => NOW * 1000 });
});
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/**
 * Runs the CLI with its stdout a pipe whose reader has already gone (`… | head -0`, a pager quit at
 * once). The reader is gone before the command starts, not merely soon after (a reader closed
 * while the command runs may find its first writes already in the pipe's buffer): the write end
 * of a FIFO opened while a reader held it, that reader then closed, so every write fails (EPIPE).
 */
async function runWithClosedStdout(args: string[]): Promise<CliResult> {
  const dir = await mkdtemp(join(tmpdir(), 'session-etl-epipe-'));
  dirs.push(dir);
  const fifo = join(dir, 'stdout');
  const made = spawnSync('mkfifo', ['-m', '0600', fifo]);
  if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY);
  closeSync(reader);
  const child = spawn(process.execPath, [BIN, ...args], { env: baseEnv(), stdio: ['ignore', writer, 'pipe'] });
  closeSync(writer);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout: '', stderr, durationMs: 0 })));
}

describe('output cut short by its reader (EPIPE)', () => {
  it.each([
    ['config', ['config']],
    ['sessions', ['sessions', '--data-dir', '', '--output', 'ndjson', '--page-size', '100']],
  ])('%s into a closed pipe ends quietly with exit 0, no stack trace', async (_name, args) => {
    const r = await runWithClosedStdout(args.map((a) => (a === '' ? dataDir : a)));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});

describe('flags a new user tries', () => {
  it('--version prints the version in package.json', async () => {
    const { version } = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(version);
  });

  it('a misspelt required option gets a did-you-mean, not "required option not specified"', async () => {
    const dir = join(tmpdir(), `session-etl-never-${process.pid}`);
    const r = await runCli(['backfill', '--form', '2026-01-01', '--to', '2026-01-02', '--data-dir', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown option '--form'");
    expect(r.stderr).toContain('Did you mean --from?');
    expect(existsSync(dir)).toBe(false);
  });

  it('config --data-dir shows that directory as coming from the command line', async () => {
    const r = await runCli(['config', '--json', '--data-dir', '/srv/account-b']);
    expect(r.code).toBe(0);
    const { values } = JSON.parse(r.stdout) as { values: Array<{ key: string; value: unknown; source: string }> };
    expect(values.find((v) => v.key === 'dataDir')).toMatchObject({ value: '/srv/account-b', source: 'flag' });
  });
});

describe('a range in the future', () => {
  it('a backfill whose --from is in the future is refused with exit 2, nothing written', async () => {
    const dir = join(tmpdir(), `session-etl-future-${process.pid}`);
    const from = isoDay(NOW + 2 * D);
    const to = isoDay(NOW + 40 * D);
    const r = await runCli(['backfill', '--from', from, '--to', to], {
      REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dir,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--from (${from}) is in the future`);
    expect(existsSync(dir)).toBe(false);
  });

  it('a range wholly inside the settle margin says there is nothing to fetch (exit 0), not only that --to is late', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-settle-'));
    dirs.push(dir);
    const r = await runCli(['backfill', '--from', String(NOW - 120), '--to', String(NOW + 3600), '--json'], {
      REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dir,
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('nothing to fetch: the whole range starts at or after now - settle');
    expect(r.stderr).not.toContain('--to is later than now - settle');
    expect(JSON.parse(r.stdout)).toMatchObject({ range: null, windows: { total: 0 } });
  });
});

describe('sessions for a person', () => {
  const base = () => ['sessions', '--data-dir', dataDir];

  it('the table shows times as ISO UTC and columns in the order --attribute-names asked', async () => {
    const r = await runCli([...base(), '--output', 'table', '--attribute-names', 'started,id,agent.email,pin', '--page-size', '3', '--sort', 'started']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]!.split(/\s+/)).toEqual(['started', 'id', 'agent.email', 'pin']);
    const first = fx.emu.dataset.sessionsStartedIn(FROM, TO).sort((a, b) => a.started! - b.started!)[0]!;
    const iso = new Date(first.started! * 1000).toISOString().replace('.000Z', 'Z');
    expect(lines[2]!.startsWith(`${iso}  ${first.id}`)).toBe(true);
  });

  it('csv and json keep the asked order too (csv with times in ISO 8601 UTC, as the dashboard\'s download)', async () => {
    const csv = await runCli([...base(), '--output', 'csv', '--attribute-names', 'pin,started,agent.email,id', '--page-size', '2']);
    expect(csv.code).toBe(0);
    const [header, row] = parseCsvWithPython(csv.stdout);
    expect(header).toEqual(['pin', 'started', 'agent.email', 'id']);
    expect(row![1]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const json = await runCli([...base(), '--output', 'json', '--attribute-names', 'pin,agent.name,started,agent.email', '--page-size', '1']);
    const item = JSON.parse(json.stdout).items[0];
    expect(Object.keys(item)).toEqual(['pin', 'agent', 'started']);
    expect(Object.keys(item.agent)).toEqual(['name', 'email']);
  });

  it('kebab-case flags and the vendor\'s camelCase spellings give the same answer; --format still means --output here', async () => {
    const kebab = await runCli([...base(), '--output', 'json', '--page-size', '4', '--attribute-names', 'id,duration', '--from-date', isoDay(FROM + D)]);
    const camel = await runCli([...base(), '--format', 'json', '--pageSize', '4', '--attributeNames', 'id,duration', '--fromDate', isoDay(FROM + D)]);
    expect(kebab.code).toBe(0);
    expect(kebab.stderr).toBe('');
    expect(camel.stderr).toBe('');
    expect(JSON.parse(kebab.stdout).items).toHaveLength(4);
    expect(JSON.parse(camel.stdout)).toEqual(JSON.parse(kebab.stdout));
    const help = await runCli(['sessions', '--help']);
    expect(help.stdout).toContain('--page-size');
    expect(help.stdout).not.toMatch(/^\s+--pageSize/m);
    const both = await runCli([...base(), '--output', 'csv', '--format', 'json']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--output csv and --format json disagree');
  });
});

describe('days only partly covered', () => {
  it('status marks the day after a backfill to midnight as partial (only its 00:00:00 sessions are stored)', async () => {
    const r = await runCli(['status', '--data-dir', dataDir]);
    expect(r.code).toBe(0);
    const toDay = isoDay(TO);
    expect(r.stdout).toContain(`partial days    ${toDay} (covered 00:00:00 only)\n`);
    const json = await runCli(['status', '--data-dir', dataDir, '--json']);
    expect(JSON.parse(json.stdout).partialDays).toEqual([{ date: toDay, covered: ['00:00:00 only'] }]);
  });
});
