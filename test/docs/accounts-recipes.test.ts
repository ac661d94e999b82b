/**
 * The readers' recipes of docs/accounts.md, run as written (the data directory's path swapped in) on
 * a many-account dataset a real backfill wrote, with a session without a start time added by the
 * store (the null-date partition, on which an untyped pandas read fails): DuckDB, and the Python
 * ones (Polars, pyarrow, pandas; required under CI, which installs them). Each prints every account
 * with its number of sessions on one line, and types `date` and `agent_group_id` as data.md's do.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { writeAccountsConfig } from '../helpers/accounts-config.js';
import { runCli } from '../helpers/cli.js';
import { addSessionWithoutStart, PYTHON_READERS, pythonHas, recipes as recipesOf, runPythonRecipe, TYPES_PROBE } from './recipes.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;
const DOC_PATH = '/var/lib/session-etl';
const recipes = () => recipesOf('accounts.md');

const accounts = ['acme', 'globex', 'initech'].map((name, i) => ({ name, apiKey: `recipe-key-${name}`, seed: 40 + i, sessionsPerDay: 20 + 10 * i }));
const fx = useEmulator({ seed: 4, from: FROM - D, to: NOW, now: NOW, accounts }, { prefix: 'session-etl-accounts-recipes-' });
let root: string;
let data: string;
/** Sessions per account, as the store counted them. */
let expected: Map<string, number>;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'session-etl-recipes-'));
  data = join(root, 'data');
  const config = join(root, 'config.json');
  await writeAccountsConfig(config, { dataDir: data, reportingUrl: fx.emu.url }, Object.fromEntries(accounts.map((a) => [a.name, `K_${a.name.toUpperCase()}`])));
  const env = Object.fromEntries(accounts.map((a) => [`K_${a.name.toUpperCase()}`, a.apiKey]));
  const r = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(FROM + 3 * D), '--json', '--log-level', 'error'], env);
  expect(r.code).toBe(0);
  await addSessionWithoutStart(data, { start: FROM, end: FROM + D }, 'acme');
  const st = JSON.parse((await runCli(['status', '--config', config, '--json'], env)).stdout) as { accounts: Array<{ account: string; status: { rows: number } }> };
  expected = new Map(st.accounts.map((a) => [a.account, a.status.rows]));
  expect([...expected.values()].every((n) => n > 0)).toBe(true);
}, 120_000);
afterAll(async () => {
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

  for (const [name, modules] of PYTHON_READERS) {
    it.skipIf(!pythonHas(modules, 'test/docs/accounts-recipes.test.ts'))(`${name}: every account with its number of sessions, typed`, () => {
      const out = runPythonRecipe(name, recipes().get(name)!.replaceAll(DOC_PATH, data));
      for (const [account, n] of expected) expect(out, `${account}: ${n}`).toMatch(new RegExp(`^\\W*${account}\\W+${n}\\W*$`, 'm'));
      expect(out).toContain(TYPES_PROBE[name]!.expected);
    });
  }
});
