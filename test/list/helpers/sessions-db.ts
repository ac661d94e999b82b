import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { expect } from 'vitest';
import type { SessionRecord } from '../../../src/schema/session-fields.js';
import { SESSION_COLUMNS, sessionsTableDdl } from '../../../src/store/contract.js';
import { evaluateInMemory } from '../../../src/list/evaluate-in-memory.js';
import type { ListPage } from '../../../src/list/list-request.js';
import { parseListRequest, type ListParams } from '../../../src/list/parse-list-request.js';
import { queryDuckDb } from '../../../src/list/query-duckdb.js';

/** A real in-memory DuckDB holding the contract's `sessions` table, time zone pinned. */
export interface SessionsDb {
  readonly connection: DuckDBConnection;
  /** Replaces the table's rows with these records. */
  load(records: readonly SessionRecord[]): Promise<void>;
  close(): void;
}

export async function openSessionsDb(): Promise<SessionsDb> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  // Pinned to a zone far from UTC, so a result that depended on it would show.
  await connection.run("SET TimeZone = 'Pacific/Kiritimati'");
  await connection.run(sessionsTableDdl());
  const placeholders = `(${SESSION_COLUMNS.map((c) => (c.type === 'TIMESTAMPTZ' ? 'to_timestamp(?)' : '?')).join(', ')})`;
  return {
    connection,
    async load(records) {
      await connection.run('DELETE FROM sessions');
      for (let i = 0; i < records.length; i += 200) {
        const batch = records.slice(i, i + 200);
        const values = batch.flatMap((r) => SESSION_COLUMNS.map((c) => rawValue(r, c.source)));
        await connection.run(`INSERT INTO sessions VALUES ${batch.map(() => placeholders).join(', ')}`, values);
      }
    },
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

function rawValue(record: SessionRecord, source: string): DuckDBValue {
  if (source === 'lineage') return 1_700_000_000;
  let v: unknown = record;
  for (const part of source.split('.')) v = v === null || typeof v !== 'object' ? undefined : (v as Record<string, unknown>)[part];
  return (v ?? null) as DuckDBValue;
}

/** Runs one request through both evaluators, demands the same page, and returns it. */
export async function listBoth(db: SessionsDb, records: readonly SessionRecord[], params: ListParams): Promise<ListPage> {
  const req = parseListRequest(params);
  const memory = evaluateInMemory(records, req);
  const sql = await queryDuckDb(db.connection, req, { table: 'sessions' });
  expect(sql).toEqual(memory);
  return memory;
}

/** The ids of a page's items, for compact expectations. */
export function ids(page: ListPage): unknown[] {
  return page.items.map((i) => i['id']);
}
