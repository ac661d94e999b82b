/**
 * `verify --delete-missing`: removes sessions the source no longer returns. Formats duckdb and both:
 * from the table, their days marked for the next flush's rewrite, in one transaction. Format parquet:
 * each day's file written again without them and put through the store's dataset, as every rewrite is.
 */
import { rm } from 'node:fs/promises';
import { parquetCopyOptions } from './row-groups.js';
import { join } from 'node:path';
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { unguessable } from '../util/temp-file.js';
import { inWriteTransaction, queryRows, sqlString } from './duckdb.js';
import { wrapWriteError } from './errors.js';
import type { OutputFormat, StoreLayout } from './layout.js';
import type { Dataset } from './dataset/dataset.js';
import type { StoreShape } from './shape.js';

/** Removes the account's sessions with these ids (stored on these days). Returns how many were removed. */
export async function removeSessions(
  c: DuckDBConnection,
  store: { format: OutputFormat; shape: StoreShape; layout: StoreLayout; dataset: Dataset; rowGroupRows: number },
  account: string,
  ids: readonly string[],
  days: readonly string[],
  nextGen: (c: DuckDBConnection) => Promise<bigint>,
): Promise<number> {
  if (!ids.length) return 0;
  const { shape } = store;
  const own = ` AND ${shape.account()} = ${sqlString(account)}`;
  if (store.format !== 'parquet') {
    return inWriteTransaction(c, 'removing sessions the source no longer returns', async () => {
      const r = await c.run(`DELETE FROM sessions WHERE session_id IN (SELECT unnest($1::VARCHAR[]))${own}`, [listValue([...ids])]);
      if (store.format === 'both' && days.length) {
        await c.run('INSERT INTO _parquet_pending SELECT unnest($1::VARCHAR[]), $2', [listValue([...days]), await nextGen(c)]);
      }
      return Number(r.rowsChanged);
    });
  }
  let removed = 0;
  for (const day of days) {
    const file = await store.dataset.read(day);
    if (!file) continue;
    const tmp = join(store.layout.tmpDir, `${day}-${process.pid}-${Date.now() % 1_000_000}-${unguessable()}.parquet`);
    let before: number;
    let copied: { rowsChanged: number | bigint };
    try {
      before = Number((await queryRows<{ n: bigint }>(c, `SELECT count(*) AS n FROM read_parquet(${sqlString(file.path)})`))[0]?.n ?? 0);
      copied = await c.run(
        `COPY (SELECT ${shape.columnList} FROM read_parquet(${sqlString(file.path)})
               WHERE NOT (session_id IN (${ids.map(sqlString).join(', ')})${own}) ORDER BY ${shape.fileOrder})
         TO ${sqlString(tmp)} (${parquetCopyOptions(store.rowGroupRows)})`,
      );
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => {});
      throw wrapWriteError(err, `rewriting Parquet partition date=${day} without the sessions the source no longer returns`);
    } finally {
      await file.done();
    }
    await store.dataset.put(day, tmp, Number(copied.rowsChanged));
    removed += before - Number(copied.rowsChanged);
  }
  return removed;
}
