/**
 * What the recipe tests of docs/data.md and docs/accounts.md share: the code blocks marked
 * `<!-- recipe:NAME -->`, the Python readers (required under CI, which installs them; otherwise a
 * missing one skips its test and says so), and a session without a start time written by the real
 * store, so that every dataset read has the partition `date=__HIVE_DEFAULT_PARTITION__`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SessionStore } from '../../src/store/session-store.js';
import { REPO_ROOT } from '../helpers/cli.js';

/** The code block after each `<!-- recipe:NAME -->` marker of docs/`doc`. */
export function recipes(doc: string): Map<string, string> {
  const text = readFileSync(join(REPO_ROOT, 'docs', doc), 'utf8');
  const out = new Map<string, string>();
  for (const m of text.matchAll(/<!-- recipe:(\w+) -->\n```\w*\n([\s\S]*?)```/g)) out.set(m[1]!, m[2]!);
  return out;
}

/** The Python readers and the module each recipe imports. */
export const PYTHON_READERS = [
  ['pyarrow', 'pyarrow'],
  ['pandas', 'pandas, pyarrow'],
  ['polars', 'polars'],
] as const;

/** Whether python3 imports `modules`; under CI a missing one is an error (.ci/run installs them). */
export function pythonHas(modules: string, testFile: string): boolean {
  if (spawnSync('python3', ['-c', `import ${modules}`], { stdio: 'ignore' }).status === 0) return true;
  if (process.env.CI === 'true') throw new Error(`python3 cannot import ${modules}: pip install pyarrow pandas polars (.ci/run installs them)`);
  process.stderr.write(`${testFile}: skipping the recipe that needs ${modules} (python3 cannot import it on this machine; pip install pyarrow pandas polars)\n`);
  return false;
}

/**
 * The lines each Python recipe's frame is checked with, printed after the recipe's own output:
 * the types of `date`, `agent_group_id` and `started_at` as the reader holds them.
 */
export const TYPES_PROBE: Record<string, { probe: string; expected: string }> = {
  pyarrow: {
    probe: "print('TYPES', table.schema.field('date').type, table.schema.field('agent_group_id').type, table.schema.field('started_at').type, sep=' | ')",
    expected: 'TYPES | date32[day] | int64 | timestamp[us, tz=UTC]',
  },
  pandas: {
    probe: "print('TYPES', df['date'].dtype, df['agent_group_id'].dtype, df['started_at'].dtype, sep=' | ')",
    expected: 'TYPES | date32[day][pyarrow] | int64[pyarrow] | timestamp[us, tz=UTC][pyarrow]',
  },
  polars: {
    probe: "print('TYPES', df.schema['date'], df.schema['agent_group_id'], df.schema['started_at'], sep=' | ')",
    expected: "TYPES | Date | Int64 | Datetime(time_unit='us', time_zone='UTC')",
  },
};

/** Runs a Python recipe as written, then its types probe; returns what it printed. */
export function runPythonRecipe(name: string, code: string): string {
  return execFileSync('python3', ['-c', `${code}\n${TYPES_PROBE[name]!.probe}\n`], { encoding: 'utf8' });
}

/**
 * Adds one session without a start time (and without an agent group) to the store of `dataDir`
 * through the store itself (a window committed, merged, the Parquet partitions rewritten), as a
 * source's record with a null `started` would be stored.
 */
export async function addSessionWithoutStart(dataDir: string, window: { start: number; end: number }, account = ''): Promise<void> {
  const store = await SessionStore.open({ dataDir });
  try {
    const rec = { id: 'no-start-1', companyId: 'c1', started: null, ended: null, duration: 0, agent: { id: 'a1', name: 'Ann', email: 'ann@example.com' }, externalFields: { notes: 'no start' } };
    await store.commitWindow({ account, window, ndjson: { bytes: Buffer.from(JSON.stringify(rec) + '\n'), count: 1, extractedAt: window.end }, rejected: [], runId: 'recipes' });
    await store.flush();
  } finally {
    await store.close();
  }
}
