/**
 * docs/data.md's readers' recipes (issue 38), run as written on what `npm start` writes: the demo's
 * `data/demo/` (here a temporary directory's, the path swapped in), with a session without a start
 * time added by the store, so that the dataset has the null-date partition. Every reader (DuckDB,
 * pyarrow, pandas, Polars) prints each day with its sessions on one line, and types `date` as a
 * date and `agent_group_id` as an integer. Also: the files are sorted but do not declare it.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { addSessionWithoutStart, PYTHON_READERS, pythonHas, recipes, runPythonRecipe, TYPES_PROBE } from './recipes.js';
import { D } from '../helpers/time.js';

const DOC_DATA_DIR = 'data/demo';
let root: string;
let demo: string;
/** Sessions per UTC day of `started_at` ('null' for those without), from the DuckDB table. */
let expected: Array<[string, number]>;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'session-etl-data-recipes-'));
  demo = join(root, 'data', 'demo');
  const r = await runCli(['demo', '--data-dir', demo, '--days', '3', '--sessions-per-day', '40', '--no-progress', '--json']);
  expect(r.code, r.stderr).toBe(0);
  const today = Math.floor(Date.now() / 1000 / D) * D;
  await addSessionWithoutStart(demo, { start: today - 3 * D, end: today - 2 * D });
  const inst = await DuckDBInstance.create(join(demo, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
  const conn = await inst.connect();
  try {
    const rows = (await conn.runAndReadAll(
      "SELECT coalesce(strftime(started_at AT TIME ZONE 'UTC', '%Y-%m-%d'), 'null') AS d, count(*) AS n FROM sessions GROUP BY 1 ORDER BY 1",
    )).getRows();
    expected = rows.map((r) => [String(r[0]), Number(r[1])]);
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
  expect(expected.find(([d]) => d === 'null')?.[1]).toBe(1);
  expect(readdirSync(join(demo, 'parquet', 'sessions'))).toContain('date=__HIVE_DEFAULT_PARTITION__');
}, 120_000);
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("docs/data.md: the readers' recipes, on the demo's data directory", () => {
  it('has the four recipes, all on the paths `npm start` writes', () => {
    const all = recipes('data.md');
    expect([...all.keys()].sort()).toEqual(['duckdb', 'pandas', 'polars', 'pyarrow']);
    for (const [name, code] of all) expect(code, name).toContain(`${DOC_DATA_DIR}/parquet/sessions`);
  });

  it('DuckDB: every day with its sessions, the null date too, `date` a DATE', async () => {
    const sql = recipes('data.md').get('duckdb')!.replaceAll(DOC_DATA_DIR, demo);
    const inst = await DuckDBInstance.create(':memory:');
    const conn = await inst.connect();
    try {
      const statements = sql.split(';').map((s) => s.trim()).filter(Boolean);
      for (const s of statements.slice(0, -1)) await conn.run(s);
      const reader = await conn.runAndReadAll(statements.at(-1)!);
      expect(reader.columnNames()[0]).toBe('date');
      expect(String(reader.columnTypes()[0])).toBe('DATE');
      const rows = reader.getRowObjectsJS() as Array<{ date: Date | null; sessions: bigint }>;
      const got = rows.map((r) => [r.date === null ? 'null' : r.date.toISOString().slice(0, 10), Number(r.sessions)]);
      expect(got.sort()).toEqual([...expected].sort());
    } finally {
      conn.closeSync();
      inst.closeSync();
    }
  });

  for (const [name, modules] of PYTHON_READERS) {
    it.skipIf(!pythonHas(modules, 'test/docs/data-recipes.test.ts'))(`${name}: prints every day with its sessions on one line, typed`, () => {
      const out = runPythonRecipe(name, recipes('data.md').get(name)!.replaceAll(DOC_DATA_DIR, demo));
      for (const [day, n] of expected) {
        const shown = day === 'null' ? '(None|<NA>|null)' : day;
        expect(out, `${day}: ${n}`).toMatch(new RegExp(`^\\W*${shown}\\W+${n}\\W*$`, 'm'));
      }
      expect(out).toContain(TYPES_PROBE[name]!.expected);
    });
  }

  it.skipIf(!pythonHas('pyarrow', 'test/docs/data-recipes.test.ts'))(
    'the day files are sorted by started_at, and do not declare it (sorting_columns is empty, as data.md says)',
    () => {
      const day = readdirSync(join(demo, 'parquet', 'sessions')).filter((d) => d !== 'date=__HIVE_DEFAULT_PARTITION__').sort()[1]!;
      const file = join(demo, 'parquet', 'sessions', day, 'part-0.parquet');
      const out = execFileSync(
        'python3',
        ['-c', 'import sys, pyarrow.parquet as pq\nf = pq.ParquetFile(sys.argv[1])\nt = f.read(columns=["started_at"])["started_at"].to_pylist()\nprint(f.metadata.num_row_groups, repr(f.metadata.row_group(0).sorting_columns), t == sorted(t))', file],
        { encoding: 'utf8' },
      );
      expect(out.trim()).toBe('1 () True');
    },
  );
});
