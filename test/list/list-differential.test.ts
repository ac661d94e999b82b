import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateInMemory } from '../../src/list/evaluate-in-memory.js';
import { isListSyntaxError } from '../../src/list/list-syntax-error.js';
import type { ListRequest } from '../../src/list/list-request.js';
import { parseListRequest } from '../../src/list/parse-list-request.js';
import { queryDuckDb } from '../../src/list/query-duckdb.js';
import { recordsArb, requestParamsArb } from './helpers/arbitraries.js';
import { openSessionsDb, type SessionsDb } from './helpers/sessions-db.js';

/**
 * LIST_DIFF_SCALE=10 runs ten times as many datasets (default: 50 datasets × 25 requests);
 * LIST_DIFF_SEED picks another sequence. A failure prints the seed and path to replay it.
 */
const SCALE = Number(process.env['LIST_DIFF_SCALE'] ?? 1);
const SEED = Number(process.env['LIST_DIFF_SEED'] ?? 20240301);
const DATASETS = Math.max(1, Math.round(50 * SCALE));
const REQUESTS = 25;

let db: SessionsDb;
beforeAll(async () => {
  db = await openSessionsDb();
});
afterAll(() => db.close());

describe('in-memory and DuckDB evaluators', () => {
  it(`agree on ${DATASETS * REQUESTS} random requests over ${DATASETS} random datasets`, async () => {
    const seen = { requests: 0, rejected: 0, nonEmpty: 0, filtered: 0, items: 0 };
    await fc.assert(
      fc.asyncProperty(recordsArb(40), fc.array(requestParamsArb, { minLength: REQUESTS, maxLength: REQUESTS }), async (records, requests) => {
        await db.load(records);
        for (const params of requests) {
          seen.requests++;
          let req: ListRequest;
          try {
            // URLSearchParams: values exactly as generated, no percent-decoding.
            req = parseListRequest(new URLSearchParams(params));
          } catch (e) {
            if (!isListSyntaxError(e)) throw e;
            seen.rejected++;
            continue;
          }
          const memory = evaluateInMemory(records, req);
          const sql = await queryDuckDb(db.connection, req, { table: 'sessions' });
          expect({ params, result: sql }).toEqual({ params, result: memory });
          if (memory.items.length > 0) seen.nonEmpty++;
          if (memory.total > 0 && memory.total < records.length) seen.filtered++;
          seen.items += memory.items.length;
        }
      }),
      { numRuns: DATASETS, seed: SEED, endOnFailure: true },
    );
    // The generators must exercise the evaluators, not just agree on empty pages.
    expect(seen.rejected).toBeLessThan(seen.requests * 0.1);
    expect(seen.nonEmpty).toBeGreaterThan(seen.requests * 0.4);
    expect(seen.filtered).toBeGreaterThan(seen.requests * 0.1);
  }, Math.max(60_000, 100_000 * SCALE));
});
