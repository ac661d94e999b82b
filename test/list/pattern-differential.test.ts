import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { translateJavaPattern } from '../../src/list/java-pattern.js';
import { candidateTexts, patternArb, renderPattern } from './helpers/arbitraries.js';
import { openJavaOracle } from './helpers/java-oracle.js';

/** LIST_DIFF_SCALE=10 runs ten times as many cases (default: 600 patterns, 3,600 matches). */
const SCALE = Number(process.env['LIST_DIFF_SCALE'] ?? 1);
const PATTERNS = Math.round(600 * SCALE);
const SEED = Number(process.env['LIST_DIFF_SEED'] ?? 20240301);

const fail = (index: number, problem: string): never => {
  throw new Error(`at ${index}: ${problem}`);
};

describe('random Java patterns: JavaScript, DuckDB RE2 (and Java, when installed) agree', () => {
  const samples = fc.sample(fc.tuple(patternArb, fc.nat()), { numRuns: PATTERNS, seed: SEED });
  const cases = samples.flatMap(([p, seed]) => {
    const pattern = renderPattern(p);
    return candidateTexts(p.tree, seed).map((text) => ({ pattern, text }));
  });

  it(`translates every generated pattern and gives the same answer on ${cases.length} texts`, async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      await connection.run('CREATE TABLE cases (i INTEGER, text VARCHAR, re2 VARCHAR)');
      const appender = await connection.createAppender('cases');
      const js: boolean[] = [];
      cases.forEach(({ pattern, text }, i) => {
        const t = translateJavaPattern(pattern, (index, problem) => fail(index, `${problem} in ${JSON.stringify(pattern)}`));
        js.push(t.js.test(text));
        appender.appendInteger(i);
        appender.appendVarchar(text);
        appender.appendVarchar(t.re2);
        appender.endRow();
      });
      appender.closeSync();
      const rows = (await connection.runAndReadAll('SELECT i, regexp_full_match(text, re2) AS m FROM cases ORDER BY i')).getRowObjectsJS();
      const disagreements = rows
        .filter((r) => r['m'] !== js[r['i'] as number])
        .map((r) => ({ ...cases[r['i'] as number], js: js[r['i'] as number], re2: r['m'] }));
      expect(disagreements.slice(0, 5)).toEqual([]);
      // Not every text matches, not every text fails: the generator exercises both sides.
      const hits = js.filter(Boolean).length;
      expect(hits).toBeGreaterThan(cases.length * 0.1);
      expect(hits).toBeLessThan(cases.length * 0.9);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  }, Math.max(60_000, 10_000 * SCALE));

  const oracle = openJavaOracle();
  it.skipIf(!oracle)(`means what java.util.regex (JDK ${oracle?.major}) means`, () => {
    try {
      const java = oracle!.matches(cases.map(({ pattern, text }) => [pattern, text] as const));
      const disagreements = cases
        .map(({ pattern, text }, i) => ({ pattern, text, java: java[i], ours: translateJavaPattern(pattern, fail).js.test(text) }))
        .filter((c) => c.java !== c.ours);
      expect(disagreements.slice(0, 5)).toEqual([]);
    } finally {
      oracle!.close();
    }
  }, Math.max(60_000, 10_000 * SCALE));
});
