/**
 * What a new user met (issue 28, "What a new user met"): each test runs the built CLI as a person
 * would and checks what they see — exit codes, messages, output.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/run.js';
import { readStateSnapshot } from '../../src/store/state-snapshot.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli, startCli, waitFor, type CliResult } from '../helpers/cli.js';
import { parseCsvWithPython } from '../helpers/python-csv.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;
const TO = FROM + 3 * D;

const fx = useEmulator({ seed: 28, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 80 }, { prefix: 'session-etl-new-user-' });
let dataDir: string;
let stored: number;

beforeAll(async () => {
  dataDir = await fx.tempDir();
  const s = await runBackfill({ reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir, format: 'both', from: FROM, to: TO, now: () => NOW * 1000 });
  stored = s.sessions.written;
});

/** Runs the CLI, killed after `ms` (a command that hangs fails the test instead of the suite). */
async function runBounded(args: string[], env: Record<string, string>, ms = 20_000): Promise<CliResult> {
  const child = startCli(args, env);
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  try {
    return await child.result;
  } finally {
    clearTimeout(timer);
  }
}

describe('a data directory that cannot be created', () => {
  it('under /proc: exit 2 "cannot be created" at once, not a loop at full CPU', async () => {
    const r = await runBounded(['export', '--since', isoDay(FROM), '--data-dir', '/proc/session-etl-test/data'], { REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey });
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('data directory /proc/session-etl-test/data cannot be created: /proc does not accept new directories');
  });
});

describe('sessions: csv and ndjson for files', () => {
  it('csv and ndjson hold every match without --page-size (not the first 100)', async () => {
    expect(stored).toBeGreaterThan(100); // the default page
    const nd = await runCli(['sessions', '--data-dir', dataDir, '--output', 'ndjson']);
    expect(nd.code).toBe(0);
    const ids = nd.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
    expect(ids).toHaveLength(stored);
    expect(new Set(ids).size).toBe(stored);
    const csv = await runCli(['sessions', '--data-dir', dataDir, '--output', 'csv', '--attribute-names', 'id,started']);
    expect(csv.code).toBe(0);
    const records = parseCsvWithPython(csv.stdout);
    expect(records[0]).toEqual(['id', 'started']);
    expect(new Set(records.slice(1).map((cells) => cells[0])).size).toBe(stored);
  });

  it('a page of csv asked for with --page-size says on stderr what it left out', async () => {
    const r = await runCli(['sessions', '--data-dir', dataDir, '--output', 'csv', '--page-size', '5', '--attribute-names', 'id']);
    expect(r.code).toBe(0);
    expect(parseCsvWithPython(r.stdout)).toHaveLength(6);
    expect(r.stderr).toContain(`wrote 5 of ${stored} matching sessions`);
  });
});

describe('sessions: the table for a person', () => {
  it('columns line up with wide characters (CJK, emoji) in a cell: each takes two columns', async () => {
    const r = await runCli(['sessions', '--data-dir', dataDir, '--output', 'table', '--attribute-names', 'agent.name,id', '--page-size', '1000']);
    expect(r.code).toBe(0);
    // Columns as a terminal draws them: CJK ideographs, kana, Hangul and this emoji take two.
    const columns = (s: string) => [...s].reduce((w, ch) => w + (/[\u3000-\u9fff\uac00-\ud7a3\u{1f680}]/u.test(ch) ? 2 : 1), 0);
    const lines = r.stdout.split('\n').filter((l) => /[0-9a-f]{8}-[0-9a-f]{4}-/.test(l));
    expect(lines.some((l) => /[王佐김]|🚀/u.test(l))).toBe(true);
    const idColumn = columns(r.stdout.split('\n')[0]!.slice(0, r.stdout.split('\n')[0]!.indexOf('id')));
    for (const l of lines) expect({ l, at: columns(l.slice(0, l.search(/[0-9a-f]{8}-[0-9a-f]{4}-/))) }).toEqual({ l, at: idColumn });
  });

  it('--from in the future prints one clear "no sessions" line, not blank lines', async () => {
    const r = await runCli(['sessions', '--data-dir', dataDir, '--output', 'table', '--from', isoDay(NOW + 30 * D)]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`no sessions match (--from ${isoDay(NOW + 30 * D)}T00:00:00Z is in the future)\n`);
  });

  it('an unknown field in --attribute-names is kept as an empty column (it counts as null), with a did-you-mean', async () => {
    const r = await runCli(['sessions', '--data-dir', dataDir, '--output', 'csv', '--attribute-names', 'id,agent.nmae,pin', '--page-size', '2']);
    expect(r.code).toBe(0);
    const [header, row] = parseCsvWithPython(r.stdout);
    expect(header).toEqual(['id', 'agent.nmae', 'pin']);
    expect(row![0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(row![1]).toBe('');
    expect(r.stderr).toContain('no session field is called agent.nmae (did you mean agent.name?)');
    const json = await runCli(['sessions', '--data-dir', dataDir, '--output', 'json', '--attribute-names', 'id,foo', '--page-size', '1']);
    expect(Object.entries((JSON.parse(json.stdout) as { items: object[] }).items[0]!)).toEqual([
      ['id', expect.any(String)],
      ['foo', null],
    ]);
  });
});

describe('export: a start that cannot be used, a chunk that cannot be split', () => {
  it('--since in the future is refused (exit 2), as backfill refuses a --from in the future; nothing is written', async () => {
    const dir = join(await fx.tempDir(), 'never');
    const r = await runCli(['export', '--since', isoDay(NOW + 3 * D)], fx.env(dir));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--since (${isoDay(NOW + 3 * D)}) is in the future: there is nothing to export yet`);
    expect(existsSync(dir)).toBe(false);
  });

  it('--since on a data directory with a checkpoint says it is not used, naming the checkpoint and the backfill that reads it', async () => {
    const dir = await fx.tempDir();
    await runBackfill({ reportingUrl: fx.emu.url, apiKey: fx.emu.apiKey, dataDir: dir, format: 'duckdb', from: TO, to: TO + D, now: () => NOW * 1000 });
    const r = await runCli(['export', '--since', isoDay(FROM), '--json'], fx.env(dir));
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`--since ${isoDay(FROM)}T00:00:00Z is not used: this data directory has a checkpoint (${isoDay(TO + D)}T00:00:00Z)`);
    expect(r.stderr).toContain(`session-etl backfill --from ${isoDay(FROM)} --to ${isoDay(TO)}`);
    // A configured startDate is for the first run only: no warning for it on later runs.
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ startDate: isoDay(FROM) }));
    const later = await runCli(['export', '--json', '--config', config], fx.env(dir));
    expect(later.code).toBe(0);
    expect(later.stderr).not.toContain('is not used');
  });

  it('--chunk shorter than --min-chunk is refused (exit 2) before anything is written, not 345,600 windows in silence', async () => {
    const dir = join(await fx.tempDir(), 'never');
    const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--chunk', '1s'], fx.env(dir));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--chunk 1s is shorter than --min-chunk 1m (the smallest window bisection makes): give a --chunk of at least 1m');
    expect(existsSync(dir)).toBe(false);
    const e = await runCli(['export', '--since', isoDay(FROM), '--chunk', '30s'], fx.env(dir));
    expect(e.code).toBe(2);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('an interrupted backfill, and status during and after it', () => {
  it('says the exact command that resumes it; status shows the windows done during the run and the unfinished range after', async () => {
    const dir = await fx.tempDir();
    fx.emu.setFaults({ latencyMs: 700 });
    try {
      const run = startCli(['backfill', '--from', isoDay(FROM - D), '--to', isoDay(TO), '--chunk', '6h', '--concurrency', '1', '--data-dir', dir], fx.env(dir));
      await waitFor(async () => ((await readStateSnapshot(dir).catch(() => null))?.running?.progress?.windowsDone ?? 0) >= 1, 30_000, 'a window to commit');
      const during = await runCli(['status', '--data-dir', dir]);
      expect(during.stdout).toMatch(/^running now {5}pid \d+ on .*; ([1-9]|1[0-5]) of 16 windows done, \d+ records fetched \(as of \S+\)$/m);
      const duringJson = JSON.parse((await runCli(['status', '--data-dir', dir, '--json'])).stdout) as { progress: { windowsTotal: number } };
      expect(duringJson.progress).toMatchObject({ windowsTotal: 16 });
      run.kill('SIGINT');
      const r = await run.result;
      expect(r.code).toBe(130);
      const resume = `session-etl backfill --from ${isoDay(FROM - D)} --to ${isoDay(TO)} --data-dir ${dir}`;
      expect(r.stderr).toContain(`to resume it, run \`${resume}\``);

      const after = await runCli(['status', '--data-dir', dir]);
      expect(after.stdout).toMatch(new RegExp(`^backfills {7}${isoDay(FROM - D)}T00:00:00Z – ${isoDay(TO)}T00:00:00Z unfinished \\(run backfill-\\S+\\): .* not loaded; resume: ${resume.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, 'm'));
      const json = JSON.parse((await runCli(['status', '--data-dir', dir, '--json'])).stdout) as { unfinishedBackfills: Array<{ resume: string }> };
      expect(json.unfinishedBackfills).toEqual([expect.objectContaining({ resume })]);

      fx.emu.setFaults({});
      const resumed = await runCli(resume.split(' ').slice(1), fx.env(dir));
      expect(resumed.code).toBe(0);
      expect(resumed.stdout).toContain('(resumed an interrupted backfill)');
      expect((await runCli(['status', '--data-dir', dir])).stdout).toContain('backfills       none unfinished\n');
    } finally {
      fx.emu.setFaults({});
    }
  });
});

describe('config says where each value comes from', () => {
  it('a value from the .env file says ".env file", not "env"; tokenFile shows the default path, not null', async () => {
    const cwd = await fx.tempDir();
    await writeFile(join(cwd, '.env'), 'SESSION_ETL_DATA_DIR=/srv/from-dotenv\n');
    const xdg = join(cwd, 'xdg');
    const r = await runCli(['config'], { XDG_CONFIG_HOME: xdg }, cwd);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^dataDir +"\/srv\/from-dotenv" +\.env file$/m);
    expect(r.stdout).toMatch(new RegExp(`^tokenFile +${JSON.stringify(join(xdg, 'session-etl', 'tokens.json')).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`, 'm'));
    expect(r.stdout).not.toMatch(/^tokenFile +null/m);
    const json = JSON.parse((await runCli(['config', '--json'], { XDG_CONFIG_HOME: xdg, SESSION_ETL_LOG_LEVEL: 'warn' }, cwd)).stdout) as {
      values: Array<{ key: string; value: unknown; source: string }>;
    };
    expect(json.values.find((v) => v.key === 'dataDir')).toEqual({ key: 'dataDir', value: '/srv/from-dotenv', source: 'env-file' });
    expect(json.values.find((v) => v.key === 'logLevel')).toEqual({ key: 'logLevel', value: 'warn', source: 'env' });
  });
});

describe('did you mean, for this command', () => {
  it.each([
    [['export', '--from', '2026-01-01'], '--from', '--since'],
    [['export', '--start', '2026-01-01'], '--start', '--since'],
    [['backfill', '--since', '2026-01-01', '--to', '2026-01-02'], '--since', '--from'],
    [['backfill', '--start', '2026-01-01', '--to', '2026-01-02'], '--start', '--from'],
    [['backfill', '--from', '2026-01-01', '--until', '2026-01-02'], '--until', '--to'],
    [['sessions', '--since', '2026-01-01'], '--since', '--from'],
  ])('%j: %s suggests %s (the option meant, not the nearest spelling)', async (args, unknown, meant) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`error: unknown option '${unknown}'\n(Did you mean ${meant}?)`);
  });

  it('schedule --since says where a start goes instead', async () => {
    const r = await runCli(['schedule', '--since', '2026-01-01']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('schedule has no start of its own: set startDate in the configuration file');
  });

  it('-v prints the version, as -V and --version do', async () => {
    const v = await runCli(['-v']);
    expect(v.code).toBe(0);
    expect(v.stdout).toBe((await runCli(['--version'])).stdout);
  });
});

describe('an account whose key cannot be read', () => {
  it('is named once in its error line, not "initech: account initech: …"', async () => {
    const dir = await fx.tempDir();
    const config = join(dir, 'config.json');
    const missing = join(dir, 'no-such-key');
    await writeFile(config, JSON.stringify({
      dataDir: join(dir, 'data'),
      reportingUrl: fx.emu.url,
      startDate: isoDay(TO),
      accounts: { acme: { apiKeyEnv: 'ACME_KEY' }, initech: { apiKeyFile: missing } },
    }));
    const r = await runCli(['export', '--config', config], { ACME_KEY: fx.emu.apiKey });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`  initech: its key file ${missing} (apiKeyFile) cannot be read`);
    expect(r.stdout + r.stderr).not.toContain('account initech: account initech');
    expect(r.stdout + r.stderr).not.toContain('initech: account initech');
  });
});

describe('a failed run tells its error once', () => {
  it('a first run with a wrong key: the error once (after the summary), no file named that it has just removed', async () => {
    const dir = join(await fx.tempDir(), 'data');
    const r = await runCli(['export', '--since', isoDay(TO)], fx.env(dir, { REPORTING_API_KEY: 'wrong-key-28' }));
    expect(r.code).toBe(1);
    const all = r.stdout + r.stderr;
    expect(all.split('refused the API key').length - 1).toBe(1);
    expect(r.stderr).toMatch(/^error: export \S+ failed: .*refused the API key \(HTTP 401\).*running it again will not help until that is fixed$/m);
    expect(r.stdout).toContain('  files          none kept: the run committed nothing, so it removed what it had created\n');
    expect(r.stdout).not.toMatch(/^ {2}(duckdb|parquet) /m);
    expect(existsSync(dir)).toBe(false);
    const json = await runCli(['export', '--since', isoDay(TO), '--json'], fx.env(dir, { REPORTING_API_KEY: 'wrong-key-28' }));
    expect(JSON.parse(json.stdout)).toMatchObject({ outcome: 'failed', files: { duckdb: null, parquet: null, removed: true } });
  });
});

describe('lag, one way of writing it', () => {
  it('status and status --check write the lag and the limit alike ("2d 3h", "1s"), and --max-lag not above settle is warned about', async () => {
    const st = await runCli(['status', '--data-dir', dataDir]);
    const lag = /^checkpoint +\S+ +— (.+) behind now$/m.exec(st.stdout)?.[1];
    expect(lag).toMatch(/^\d+d( \d+h)?$/);
    const check = await runCli(['status', '--check', '--data-dir', dataDir, '--max-lag', '1s']);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(`is ${lag} behind now, more than the allowed 1s (--max-lag)`);
    expect(check.stderr).toContain('warning: --max-lag 1s is not longer than settle 10m: the checkpoint always stays at least settle behind now');
    const fine = await runCli(['status', '--check', '--data-dir', dataDir, '--max-lag', '30d']);
    expect(fine.stdout).toBe(`OK: checkpoint ${isoDay(TO)}T00:00:00Z (${lag} behind now), last run succeeded\n`);
    expect(fine.stderr).toBe('');
  });
});

describe('status finds the data directory, or says why not', () => {
  it('after the demo, plain status in an empty ./data points to data/demo', async () => {
    const cwd = await fx.tempDir();
    const demo = await runCli(['demo', '--days', '1', '--sessions-per-day', '5', '--no-progress'], {}, cwd);
    expect(demo.code).toBe(0);
    const r = await runCli(['status'], {}, cwd);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('nothing exported in ./data; the demo wrote data/demo: session-etl status --data-dir data/demo');
    expect((await runCli(['status', '--data-dir', 'data/demo'], {}, cwd)).code).toBe(0);
  });

  it('status --check on a directory that does not exist: exit 2 "no such directory", not "nothing exported yet"', async () => {
    const typo = join(await fx.tempDir(), 'typo');
    for (const args of [['status', '--check', '--data-dir', typo], ['status', '--data-dir', typo]]) {
      const r = await runCli(args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toContain(`no such directory: ${typo}`);
      expect(r.stdout).not.toContain('nothing exported yet');
    }
  });
});
