/**
 * Bad input: every flag, configuration key and environment variable of the ETL commands with
 * wrong values, and data directories that cannot or must not be used. Each case must end with a
 * clear error (no stack trace), exit 2 (3 for a busy directory), and nothing written: the whole
 * directory tree around the run is identical before and after (names, types, sizes, contents).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { interfaceEmulatorEnv } from '../../src/emulator/interface/index.js';
import { runBackfill } from '../../src/pipeline/run.js';
import { check, excerpt, newResult, runCli, TempDirs, timed, type ScenarioResult } from './harness.js';

export interface BadInputCase {
  group: string;
  name: string;
  args: string[];
  env?: Record<string, string | undefined>;
  /** Prepares the directory (root holds everything the case may touch); returns the data directory. */
  setup?(root: string): Promise<string>;
  /** A configuration file's content, written to root/config.json and passed with --config. */
  configFile?: unknown;
  code?: number;
  /** What the error must say. */
  message: RegExp;
  /** Runs only as root (the case makes a directory unwritable with chattr +i). */
  needsUnwritable?: boolean;
  /** The refusal must come within this many milliseconds (no retries, no waiting). */
  maxMs?: number;
}

/** A port something listens on for the whole suite ('{busyPort}' in a case's arguments). */
let busy: Promise<{ port: number; close(): Promise<void> }> | undefined;
function busyPort(): Promise<{ port: number; close(): Promise<void> }> {
  busy ??= new Promise((resolve, reject) => {
    const srv = createServer((sock) => sock.destroy());
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () =>
      resolve({ port: (srv.address() as AddressInfo).port, close: () => new Promise<void>((r) => srv.close(() => r())) }),
    );
  });
  return busy;
}

const B = ['backfill', '--from', '2026-01-01', '--to', '2026-01-02'];
const E = ['export', '--since', '2026-01-01'];

async function otherDuckDb(root: string, file = 'sessions.duckdb'): Promise<string> {
  const dir = join(root, 'other-program');
  await mkdir(dir, { recursive: true });
  const inst = await DuckDBInstance.create(join(dir, file));
  const c = await inst.connect();
  await c.run('CREATE TABLE invoices (id INTEGER, amount DECIMAL(10,2))');
  await c.run('INSERT INTO invoices VALUES (1, 9.99), (2, 19.99)');
  c.closeSync();
  inst.closeSync();
  return dir;
}

async function dirWith(root: string, files: Record<string, string | Buffer>): Promise<string> {
  const dir = join(root, 'data');
  await mkdir(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
  return dir;
}

/** A real export of 2026-01-01 in root/data (its own emulator), in the given format. */
async function realExport(root: string, format: 'both' | 'parquet' = 'both'): Promise<string> {
  const from = Date.UTC(2026, 0, 1) / 1000;
  const emu = await startEmulator({ seed: 3, from, to: from + 86_400, now: from + 2 * 86_400, sessionsPerDay: 20 });
  const dataDir = join(root, 'data');
  try {
    await runBackfill({ reportingUrl: emu.url, apiKey: emu.apiKey, dataDir, format, from, to: from + 86_400, now: () => (from + 2 * 86_400) * 1000 });
  } finally {
    await emu.close();
  }
  return dataDir;
}

/** root/data with `entry` a symbolic link to root/outside, which holds a file of its own. */
async function linkedEntry(root: string, entry: string): Promise<string> {
  const outside = join(root, 'outside');
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, 'thesis.docx'), 'years of work');
  const dataDir = join(root, 'data');
  await mkdir(dirname(join(dataDir, entry)), { recursive: true });
  await symlink(outside, join(dataDir, entry));
  return dataDir;
}

/**
 * Cases that once destroyed or lost data (issue 13): a link inside the data directory (a backfill
 * deleted what it pointed to), demo over a real export or over files of others in its own
 * directory, a format switch on an existing directory (a partition rewritten from an empty table).
 */
export const DESTRUCTIVE_CASES: BadInputCase[] = [
  ...['.tmp', 'pending', 'parquet/sessions', '.session-etl.lock'].map((entry): BadInputCase => ({
    group: 'data directory (destructive)',
    name: `${entry} is a link to another directory`,
    args: B,
    setup: (root) => linkedEntry(root, entry),
    message: /symbolic link/,
  })),
  {
    group: 'data directory (destructive)',
    name: 'demo over a real export',
    args: ['demo', '--days', '1', '--sessions-per-day', '10', '--data-dir', '{dataDir}'],
    setup: (root) => realExport(root),
    message: /not created by the demo/,
  },
  {
    group: 'data directory (destructive)',
    name: "demo over its own directory holding a file of others in parquet/sessions/",
    args: ['demo', '--days', '1', '--sessions-per-day', '10', '--data-dir', '{dataDir}'],
    setup: async (root) => {
      const dir = await dirWith(root, { '.session-etl-demo': 'x' });
      await mkdir(join(dir, 'parquet', 'sessions', 'date=2026-01-01'), { recursive: true });
      await writeFile(join(dir, 'parquet', 'sessions', 'date=2026-01-01', 'notes.txt'), 'mine');
      return dir;
    },
    message: /did not write .*notes\.txt/,
  },
  {
    group: 'data directory (destructive)',
    name: '--format both over a parquet data directory',
    args: [...B, '--format', 'both'],
    setup: (root) => realExport(root, 'parquet'),
    message: /format parquet.*format both/,
  },
  {
    group: 'data directory (destructive)',
    name: 'SESSION_ETL_FORMAT=duckdb over a both data directory',
    args: B,
    env: { SESSION_ETL_FORMAT: 'duckdb' },
    setup: (root) => realExport(root, 'both'),
    message: /format both.*format duckdb/,
  },
];

export const BAD_INPUT_CASES: BadInputCase[] = [
  // Dates and ranges.
  { group: 'dates and ranges', name: '--from 2026-02-30', args: ['backfill', '--from', '2026-02-30', '--to', '2026-03-01'], message: /--from "2026-02-30" is not a real calendar date/ },
  { group: 'dates and ranges', name: '--from yesterday', args: ['backfill', '--from', 'yesterday', '--to', '2026-03-01'], message: /--from "yesterday" is not a date/ },
  { group: 'dates and ranges', name: '--from without UTC offset', args: ['backfill', '--from', '2026-01-01T08:00:00', '--to', '2026-03-01'], message: /has no UTC offset/ },
  { group: 'dates and ranges', name: '--to 2026-13-01', args: ['backfill', '--from', '2026-01-01', '--to', '2026-13-01'], message: /--to "2026-13-01"/ },
  { group: 'dates and ranges', name: '--to empty', args: ['backfill', '--from', '2026-01-01', '--to', ''], message: /--to/ },
  { group: 'dates and ranges', name: '--from after --to', args: ['backfill', '--from', '2026-03-01', '--to', '2026-02-01'], message: /must be before --to/ },
  { group: 'dates and ranges', name: '--from equal to --to', args: ['backfill', '--from', '2026-03-01', '--to', '2026-03-01'], message: /must be before --to/ },
  { group: 'dates and ranges', name: '--to missing', args: ['backfill', '--from', '2026-03-01'], message: /--to/ },
  { group: 'dates and ranges', name: 'export --since 2026-02-31', args: ['export', '--since', '2026-02-31'], message: /--since "2026-02-31"/ },
  { group: 'dates and ranges', name: 'first export without --since', args: ['export'], message: /--since/ },
  // Numbers and durations.
  ...(
    [
      ['--concurrency', '0'], ['--concurrency', '-2'], ['--concurrency', '1.5'], ['--concurrency', 'four'], ['--concurrency', '65'],
      ['--chunk', '0h'], ['--chunk', '3y'], ['--chunk', '-1d'], ['--chunk', 'daily'],
      ['--min-chunk', '0m'], ['--min-chunk', 'tiny'],
      ['--settle', 'soon'], ['--settle', '-10m'],
      ['--max-results-per-query', '0'], ['--max-results-per-query', '-5'], ['--max-results-per-query', 'many'],
      ['--max-requests-per-second', '0'], ['--max-requests-per-second', '-1'], ['--max-requests-per-second', 'fast'],
      ['--request-timeout', '0s'], ['--request-timeout', '60'], ['--request-timeout', 'long'],
      ['--max-attempts', '0'], ['--max-attempts', '51'], ['--max-attempts', 'x'],
    ] as const
  ).map(([flag, value]): BadInputCase => ({
    group: 'numbers and durations',
    name: `${flag} ${value}`,
    args: [...B, flag, value],
    message: new RegExp(`${flag}|${flag.replace(/^--/, '').replace(/-(\w)/g, (_m, c: string) => c.toUpperCase())}`),
  })),
  { group: 'numbers and durations', name: 'export --lookback 0h', args: [...E, '--lookback', '0h'], message: /lookback/ },
  { group: 'numbers and durations', name: 'export --lookback later', args: [...E, '--lookback', 'later'], message: /lookback/ },
  { group: 'numbers and durations', name: 'status --runs -1', args: ['status', '--runs', '-1'], message: /--runs/ },
  { group: 'numbers and durations', name: 'status --runs many', args: ['status', '--runs', 'many'], message: /--runs/ },
  { group: 'numbers and durations', name: 'demo --days 0', args: ['demo', '--days', '0'], message: /--days/ },
  { group: 'numbers and durations', name: 'demo --sessions-per-day -3', args: ['demo', '--sessions-per-day', '-3'], message: /--sessions-per-day/ },
  // Choices.
  { group: 'choices', name: '--format csv', args: [...B, '--format', 'csv'], message: /--format/ },
  { group: 'choices', name: '--on-invalid skip', args: [...B, '--on-invalid', 'skip'], message: /--on-invalid/ },
  { group: 'choices', name: '--log-level loud', args: [...B, '--log-level', 'loud'], message: /--log-level/ },
  { group: 'choices', name: 'schedule --cron "every night"', args: ['schedule', '--cron', 'every night'], message: /scheduleCron|cron/ },
  { group: 'choices', name: 'schedule --timezone Mars/Olympus', args: ['schedule', '--timezone', 'Mars/Olympus'], message: /scheduleTimezone|time zone/ },
  { group: 'choices', name: 'an unknown flag (--frobnicate)', args: [...B, '--frobnicate'], message: /unknown option/ },
  { group: 'choices', name: 'a misspelt required flag (--form)', args: ['backfill', '--form', '2026-01-01', '--to', '2026-01-02'], message: /--from/ },
  { group: 'choices', name: 'an unknown command', args: ['backfil'], message: /unknown command/ },
  // Configuration file keys.
  ...(
    [
      ['reportingUrl', 'ftp://example.com/'], ['reportingUrl', 'not a url'], ['reportingUrl', 5],
      ['dataDir', ''], ['format', 'csv'], ['chunk', '1y'], ['concurrency', '4'], ['concurrency', 0],
      ['maxResultsPerQuery', 0], ['minChunk', '0s'], ['settle', 'soon'], ['lookback', 5], ['onInvalid', 'skip'],
      ['maxRequestsPerSecond', -1], ['requestTimeout', '0s'], ['maxAttempts', 0], ['startDate', '2026-13-01'],
      ['scheduleCron', 'nightly'], ['scheduleTimezone', 'Mars/Olympus'], ['logLevel', 'loud'], ['apiKeyFile', ''],
      ['unknownKey', true],
    ] as const
  ).map(([key, value]): BadInputCase => ({
    group: 'configuration file',
    name: `${key}: ${JSON.stringify(value)}`,
    args: B,
    configFile: { [key]: value },
    message: new RegExp(key),
  })),
  { group: 'configuration file', name: 'apiKey in the file (refused: secrets stay out of files)', args: B, configFile: { apiKey: 'abc123' }, message: /holds apiKey/ },
  { group: 'configuration file', name: 'a bad value in the file that the environment overrides', args: B, configFile: { format: 'csv' }, env: { SESSION_ETL_FORMAT: 'both' }, message: /format/ },
  { group: 'configuration file', name: 'not JSON', args: B, configFile: '{ "chunk": "1d", }', message: /not valid JSON/ },
  { group: 'configuration file', name: 'a JSON array', args: B, configFile: [1, 2], message: /not a JSON object|not valid JSON/ },
  { group: 'configuration file', name: '--config names a missing file', args: [...B, '--config', '/nonexistent/session-etl.json'], message: /cannot be read/ },
  // Environment.
  { group: 'environment', name: 'REPORTING_URL unset', args: B, env: { REPORTING_URL: undefined }, message: /REPORTING_URL/ },
  { group: 'environment', name: 'REPORTING_URL=ftp://x', args: B, env: { REPORTING_URL: 'ftp://x' }, message: /REPORTING_URL \(from environment\): got "ftp:\/\/x"; expected an http/ },
  { group: 'environment', name: 'REPORTING_API_KEY unset', args: B, env: { REPORTING_API_KEY: undefined }, message: /REPORTING_API_KEY/ },
  { group: 'environment', name: 'REPORTING_API_KEY_FILE names a missing file', args: B, env: { REPORTING_API_KEY: undefined, REPORTING_API_KEY_FILE: '/nonexistent/key' }, message: /REPORTING_API_KEY_FILE \/nonexistent\/key cannot be read: no such file/ },
  { group: 'environment', name: 'SESSION_ETL_FORMAT=csv', args: B, env: { SESSION_ETL_FORMAT: 'csv' }, message: /SESSION_ETL_FORMAT \(from environment\): got "csv"; expected one of "duckdb"/ },
  { group: 'environment', name: 'SESSION_ETL_LOG_LEVEL=loud', args: B, env: { SESSION_ETL_LOG_LEVEL: 'loud' }, message: /SESSION_ETL_LOG_LEVEL \(from environment\): got "loud"; expected one of "trace"/ },
  { group: 'environment', name: 'SESSION_ETL_CONFIG names a missing file', args: B, env: { SESSION_ETL_CONFIG: '/nonexistent/c.json' }, message: /cannot be read/ },
  { group: 'environment', name: 'SESSION_ETL_DUCKDB_MEMORY_LIMIT=lots', args: B, env: { SESSION_ETL_DUCKDB_MEMORY_LIMIT: 'lots' }, message: /SESSION_ETL_DUCKDB_MEMORY_LIMIT.*256MB/ },
  { group: 'environment', name: 'SESSION_ETL_MEMORY_LIMIT=lots', args: B, env: { SESSION_ETL_MEMORY_LIMIT: 'lots' }, message: /SESSION_ETL_MEMORY_LIMIT \(from environment\): expected a size such as "384MiB".*got "lots"/ },
  { group: 'environment', name: 'SESSION_ETL_MEMORY_LIMIT below what a run needs (100MiB)', args: B, env: { SESSION_ETL_MEMORY_LIMIT: '100MiB' }, message: /the memory budget is 100 MiB \(SESSION_ETL_MEMORY_LIMIT\), below the 272 MiB a run needs.*at least 272MiB/ },
  { group: 'environment', name: 'REPORTING_URL=http://127.0.0.1:1/ (nothing can listen there): refused at once', args: B, env: { REPORTING_URL: 'http://127.0.0.1:1/' }, maxMs: 15_000, message: /http:\/\/127\.0\.0\.1:1\/.*check REPORTING_URL/s },
  // Issues 38 and 42: a unit-less size, a key file others can read, a configuration file far too large.
  { group: 'numbers and durations', name: '--memory-limit 10 (no unit)', args: [...B, '--memory-limit', '10'], message: /--memory-limit \(from command line\): "10" has no unit: a size needs one, such as "10MiB"/ },
  {
    group: 'environment',
    name: 'REPORTING_API_KEY_FILE of mode 0644',
    args: B,
    env: { REPORTING_API_KEY: undefined, REPORTING_API_KEY_FILE: '{root}/api-key' },
    setup: async (root) => {
      await writeFile(join(root, 'api-key'), 'rk-readable-by-all-0123456789abcdef\n', { mode: 0o644 });
      await chmod(join(root, 'api-key'), 0o644);
      return join(root, 'never-created');
    },
    message: /REPORTING_API_KEY_FILE \S+api-key is readable by every user of this machine \(mode 0644\).*chmod 600/,
  },
  { group: 'configuration file', name: 'a configuration file of 5 MiB', args: B, configFile: `{"chunk": "1d"${' '.repeat(5 << 20)}}`, message: /configuration file \S+ is 5\.0 MiB, larger than the 4 MiB/ },
  // Data directories.
  {
    group: 'data directory',
    name: 'a path through a file (file/sub)',
    args: B,
    setup: async (root) => {
      await writeFile(join(root, 'a-file'), 'x');
      return join(root, 'a-file', 'sub');
    },
    message: /data directory .* cannot be/,
  },
  {
    group: 'data directory',
    name: 'the data directory is a file',
    args: B,
    setup: async (root) => {
      await writeFile(join(root, 'data'), 'x');
      return join(root, 'data');
    },
    message: /data directory/,
  },
  {
    group: 'data directory',
    name: 'an existing directory that is not writable',
    args: B,
    setup: async (root) => dirWith(root, { 'notes.txt': 'keep me' }),
    needsUnwritable: true,
    message: /not writable/,
  },
  { group: 'data directory', name: "sessions.duckdb is another program's DuckDB file", args: B, setup: (root) => otherDuckDb(root), message: /DuckDB file of another program/ },
  {
    group: 'data directory',
    name: "state.duckdb is another program's DuckDB file (--format parquet)",
    args: [...B, '--format', 'parquet'],
    setup: (root) => otherDuckDb(root, 'state.duckdb'),
    message: /DuckDB file of another program/,
  },
  { group: 'data directory', name: 'sessions.duckdb is a text file', args: B, setup: (root) => dirWith(root, { 'sessions.duckdb': 'name,amount\nx,1\n'.repeat(300) }), message: /not a session-etl DuckDB file/ },
  {
    group: 'data directory',
    name: 'sessions.duckdb is an SQLite database',
    args: B,
    setup: (root) => dirWith(root, { 'sessions.duckdb': Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(8192)]) }),
    message: /not a session-etl DuckDB file/,
  },
  { group: 'data directory', name: 'parquet is a file of another program', args: B, setup: (root) => dirWith(root, { parquet: 'x' }), message: /parquet/ },
  { group: 'data directory', name: '.tmp is a file of another program', args: B, setup: (root) => dirWith(root, { '.tmp': 'x' }), message: /\.tmp|a file stands/ },
  {
    group: 'data directory',
    name: "demo --data-dir on a directory holding another program's files",
    args: ['demo', '--days', '1', '--sessions-per-day', '10', '--data-dir', '{dataDir}'],
    setup: (root) => dirWith(root, { 'thesis.docx': 'years of work', 'sessions.duckdb': 'not ours' }),
    message: /not created by the demo/,
  },
  ...DESTRUCTIVE_CASES,
  // The interface commands' flags.
  { group: 'other commands', name: 'auth login --redirect-port 70000', args: ['auth', 'login', '--no-browser', '--redirect-port', '70000'], message: /--redirect-port/ },
  { group: 'other commands', name: 'auth login --timeout -5', args: ['auth', 'login', '--no-browser', '--timeout', '-5'], message: /positive number/ },
  { group: 'other commands', name: 'session start --webhook-type abc', args: ['session', 'start', '--webhook-type', 'abc'], message: /webhook-type|integer/ },
  { group: 'other commands', name: 'emulator --port <a port in use>', args: ['emulator', '--port', '{busyPort}'], message: /port \d+ is in use \(--port\)/ },
  { group: 'other commands', name: 'emulator --seed abc', args: ['emulator', '--seed', 'abc'], message: /--seed must be an integer.*got "abc"/ },
  { group: 'other commands', name: 'sessions --filter on an unknown field (nosuchfield="x")', args: ['sessions', '--filter', 'nosuchfield="x"'], message: /--filter: no session field is called nosuchfield\nthe session fields are: id/ },
  { group: 'other commands', name: 'sessions --ascending durtion=false (misspelt field)', args: ['sessions', '--ascending', 'durtion=false'], message: /--ascending: no session field is called durtion \(did you mean duration\?\)/ },
  { group: 'other commands', name: 'session end --method GET', args: ['session', 'end', '00000000-0000-4000-8000-000000000000', '--method', 'GET'], message: /--method|method/ },
];

/** Every entry under `root`: type, size, mode and a hash of each file's bytes. */
export async function treeOf(root: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string, rel: string) => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const n of names.sort()) {
      const p = join(dir, n);
      const r = rel ? `${rel}/${n}` : n;
      const st = await lstat(p);
      if (st.isDirectory()) {
        out.set(r, `dir ${(st.mode & 0o777).toString(8)}`);
        await walk(p, r);
      } else {
        const hash = st.isFile() ? createHash('sha1').update(await readFile(p)).digest('hex') : '';
        out.set(r, `file ${st.size} ${(st.mode & 0o777).toString(8)} ${hash}`);
      }
    }
  };
  await walk(root, '');
  return out;
}

export function treeDiff(a: Map<string, string>, b: Map<string, string>): string[] {
  const d: string[] = [];
  for (const [k, v] of b) if (a.get(k) !== v) d.push(a.has(k) ? `changed ${k}` : `created ${k}`);
  for (const k of a.keys()) if (!b.has(k)) d.push(`removed ${k}`);
  return d;
}

/** Makes a directory unwritable even for root (chattr +i), or with chmod for other users. Returns the undo. */
export function makeUnwritable(dir: string): (() => Promise<void>) | undefined {
  if (process.getuid?.() !== 0) {
    chmodSync(dir, 0o555);
    return () => chmod(dir, 0o755);
  }
  try {
    execFileSync('chattr', ['+i', dir], { stdio: 'ignore' });
    return async () => {
      execFileSync('chattr', ['-i', dir], { stdio: 'ignore' });
    };
  } catch {
    return undefined;
  }
}

export async function runBadInput(
  o: { log?: (line: string) => void; only?: (c: BadInputCase) => boolean; parallel?: number } = {},
): Promise<ScenarioResult[]> {
  const log = o.log ?? (() => {});
  const emu: Emulator = await startEmulator({ seed: 3, sessionsPerDay: 10 });
  const temp = new TempDirs();
  const rows = new Map<string, ScenarioResult>();
  const skipped: string[] = [];
  try {
    const cases = BAD_INPUT_CASES.filter(o.only ?? (() => true));
    for (const c of cases) if (!rows.has(c.group)) rows.set(c.group, newResult('4. bad input', c.group));
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++]!;
        const r = rows.get(c.group)!;
        await timed(r, () => runInputCase(c, r, { emu, temp, skipped }));
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, o.parallel ?? 3) }, worker));
  } finally {
    await emu.close();
    await temp.cleanup();
    if (busy) await (await busy).close();
    busy = undefined;
  }
  const out = [...rows.values()];
  for (const r of out) log(`bad input: ${r.scenario}: ${r.trials} cases, ${r.failures.length ? 'FAILED' : 'ok'}`);
  if (skipped.length && out[0]) out[0].notes.push(`skipped (cannot make a directory unwritable here): ${skipped.join(', ')}`);
  return out;
}

/** One case: prepare, snapshot the tree, run, compare exit code, message and tree. */
async function runInputCase(c: BadInputCase, r: ScenarioResult, x: { emu: Emulator; temp: TempDirs; skipped: string[] }): Promise<void> {
  const root = await x.temp.make('input-');
  const cwd = join(root, 'cwd');
  await mkdir(cwd);
  const dataDir = c.setup ? await c.setup(root) : join(root, 'never-created');
  const port = c.args.includes('{busyPort}') ? String((await busyPort()).port) : '';
  const args = c.args.map((a) => (a === '{dataDir}' ? dataDir : a === '{busyPort}' ? port : a));
  if (c.configFile !== undefined) {
    const file = join(cwd, 'config.json');
    await writeFile(file, typeof c.configFile === 'string' ? c.configFile : JSON.stringify(c.configFile));
    args.push('--config', file);
  }
  const before = await treeOf(root);
  let undo: (() => Promise<void>) | undefined;
  if (c.needsUnwritable) {
    undo = makeUnwritable(dataDir);
    if (!undo) {
      x.skipped.push(c.name);
      return;
    }
  }
  const env: Record<string, string | undefined> = {
    REPORTING_URL: x.emu.url,
    REPORTING_API_KEY: x.emu.apiKey,
    SESSION_ETL_DATA_DIR: dataDir,
    SESSION_ETL_TOKEN_FILE: join(root, 'tokens.json'),
    ...interfaceEmulatorEnv(x.emu.url),
    ...c.env,
  };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete env[k];
    else env[k] = v.replace('{root}', root);
  }
  const t0 = Date.now();
  const run = await runCli(args, env, cwd);
  const ms = Date.now() - t0;
  if (undo) await undo();
  const after = await treeOf(root);
  r.trials++;
  r.injected++;
  const expected = c.code ?? 2;
  check(r, run.code === expected, `${c.name}: expected exit ${expected}, got ${excerpt(run)}`);
  const err = run.stderr;
  check(r, /^error: /m.test(err) && c.message.test(err), `${c.name}: the error does not say ${c.message}: ${err.trim().slice(0, 300)}`);
  check(r, !/\n\s+at /.test(err), `${c.name}: a stack trace was printed`);
  if (c.maxMs !== undefined) check(r, ms <= c.maxMs, `${c.name}: refused after ${ms} ms, not at once (at most ${c.maxMs} ms)`);
  const diff = treeDiff(before, after);
  check(r, diff.length === 0, `${c.name}: the run wrote: ${diff.slice(0, 4).join(', ')}`);
  if (c.group === 'data directory' && run.code === expected) {
    r.notes.push(`${c.name}: "${err.split('\n')[0]!.replace(/^error: /, '').replace(/\/tmp\/[^/\s]+\//g, '…/').slice(0, 200)}"`);
  }
}
