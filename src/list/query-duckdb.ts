import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { ACCOUNT_COLUMN, compileToSql, type ListSource } from './compile-to-sql.js';
import { pageOf, shapeRecord, type ListPage, type ListRequest } from './list-request.js';

/** Answers a list request in DuckDB (the count, then the page): the result of `evaluateInMemory`. */
export async function queryDuckDb(connection: DuckDBConnection, req: ListRequest, source: ListSource): Promise<ListPage> {
  const compiled = compileToSql(req, source);
  const params = compiled.params as DuckDBValue[];
  const countRows = (await connection.runAndReadAll(compiled.countSql, params)).getRowObjectsJS();
  const total = Number(countRows[0]?.['total'] ?? 0);
  return pageOf(req, total, async (limit, offset) => {
    const rows = (await connection.runAndReadAll(compiled.sql, [...params, limit, offset])).getRowObjectsJS();
    // With `withAccount`, the account comes first: it says whose session the rest is.
    return rows.map((row) => ({
      ...(source.withAccount ? { [ACCOUNT_COLUMN]: fromSql(row[ACCOUNT_COLUMN]) } : {}),
      ...shapeRecord(compiled.leaves, (leaf) => fromSql(row[leaf.path])),
    }));
  });
}

/** BIGINT arrives as bigint; the interface's integers are numbers. */
function fromSql(v: unknown): unknown {
  return typeof v === 'bigint' ? Number(v) : (v ?? null);
}
