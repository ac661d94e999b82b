/**
 * The sessions download: a list request's matches as CSV (the columns asked for, else every field)
 * in `sessions --output csv`'s dialect (util/csv-cell.ts), streamed from DuckDB a chunk at a time,
 * each made text once `write` (which waits while the client reads) took the previous: a download
 * holds one chunk in memory whatever its size, and the event loop stays free between chunks.
 */
import type { ListRequest } from '../list/index.js';
import { resolveWindow } from '../list/list-request.js';
import { sessionsCsv } from '../util/csv-cell.js';
import type { ParquetReader } from './data-source.js';
import { askedColumns, sessionsSql } from './queries.js';

/** `total` is the count of matches, of which the first MAX_CSV_ROWS are written, as the page sorts. */
export async function writeSessionsCsv(
  reader: ParquetReader,
  req: ListRequest,
  total: number,
  write: (text: string) => Promise<void>,
  timeoutMs?: number,
): Promise<void> {
  const { sql, params, leaves } = sessionsSql(reader, req);
  const columns = askedColumns(req) ?? leaves.map((l) => l.path);
  const epoch = new Set(leaves.filter((l) => l.kind === 'epoch').map((l) => l.path));
  const csv = sessionsCsv(columns, columns.map((c) => epoch.has(c)));
  await write(csv.header);
  const window = resolveWindow(req.paging, total);
  if (window.limit <= 0) return;
  await reader.stream(sql, [...params, window.limit, window.offset], async (names, rows) => {
    const at = columns.map((c) => names.indexOf(c));
    let text = '';
    for (const row of rows) text += csv.row(at.map((i) => (i < 0 ? null : row[i])));
    await write(text);
  }, timeoutMs);
}
