/**
 * The readers' recipes of docs/accounts.md, run as written (the data directory's path swapped in) on
 * a many-account dataset a real backfill wrote: DuckDB always, the Python ones (Polars, pyarrow,
 * pandas) where this machine has the library (each says so when it is skipped).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { REPO_ROOT, runCli } from '../helpers/cli.js';

const D = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;
const iso = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
const DOC_PATH = '/var/lib/session-etl';

/** The code block after each `<!-- recipe:NAME -->` marker. */
function recipes(): Map<string, string> {
  const text = readFileSync(join(REPO_ROOT, 'docs', 'accounts.md'), 'utf8');
  const out = new Map<string, string>();
  for (const m of text.matchAll(/<!-- recipe:(\w+) -->\n```\w*\n([\s\S]*?)```/g)) out.set(m[1]!, m[2]!);
  return out;
}

function pythonHas(module: string): boolean {
  return spawnSync('python3', ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0;
}

let emu: Emulator;
let root: string;
let data: string;
/** Sessions per account, as the store counted them. */
let expected: Map<string, number>;

beforeAll(async () => {
  const accounts = ['acme', 'globex', 'initech'].map((name, i) => ({ name, apiKey: `recipe-key-${name}`, seed: 40 + i, sessionsPerDay: 20 + 10 * i }));
  emu = await startEmulator({ seed: 4, from: FROM - D, to: NOW, now: NOW, accounts });
  root = await mkdtemp(join(tmpdir(), 'session-etl-recipes-'));
  data = join(root, 'data');
  const config = join(root, 'config.json');
  await writeFile(config, JSON.stringify({ dataDir: data, reportingUrl: emu.url, accounts: Object.fromEntries(accounts.map((a) => [a.name, { apiKeyEnv: `K_${a.name.toUpperCase()}` }])) }));
  const env = Object.fromEntries(accounts.map((a) => [`K_${a.name.toUpperCase()}`, a.apiKey]));
  const r = await runCli(['backfill', '--config', config, '--from', iso(FROM), '--to', iso(FROM + 3 * D), '--json', '--log-level', 'error'], env);
  expect(r.code).toBe(0);
  const st = JSON.parse((await runCli(['status', '--config', config, '--json'], env)).stdout) as { accounts: Array<{ account: string; status: { rows: number } }> };
  expected = new Map(st.accounts.map((a) => [a.account, a.status.rows]));
  expect([...expected.values()].every((n) => n > 0)).toBe(true);
}, 120_000);
afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('docs/accounts.md: reading a many-account dataset', () => {
  it('has the four recipes', () => {
    expect([...recipes().keys()].sort()).toEqual(['duckdb', 'pandas', 'polars', 'pyarrow']);
  });

  it('DuckDB: sessions and mean duration per account, every account once', async () => {
    const sql = recipes().get('duckdb')!.replaceAll(DOC_PATH, data);
    const inst = await DuckDBInstance.create(':memory:');
    const conn = await inst.connect();
    try {
      const rows = (await conn.runAndReadAll(sql)).getRowObjectsJS() as Array<{ account: string; sessions: bigint }>;
      expect(rows.map((r) => [r.account, Number(r.sessions)])).toEqual([...expected].sort());
    } finally {
      conn.closeSync();
      inst.closeSync();
    }
  });

  for (const [name, module] of [['polars', 'polars'], ['pyarrow', 'pyarrow'], ['pandas', 'pandas, pyarrow']] as const) {
    const available = pythonHas(module);
    if (!available) process.stderr.write(`test/docs/accounts-recipes.test.ts: skipping the ${name} recipe (python3 cannot import ${module} on this machine)\n`);
    it.skipIf(!available)(`${name}: every account with its number of sessions`, () => {
      const code = recipes().get(name)!.replaceAll(DOC_PATH, data);
      const out = execFileSync('python3', ['-c', code], { encoding: 'utf8' });
      for (const [account, n] of expected) expect(out).toMatch(new RegExp(`${account}\\b[^\\n]*\\b${n}\\b`));
    });
  }
});
