/**
 * The sessions download: a list request's matches as CSV (the columns asked for, else every field),
 * in the one dialect `sessions --output csv` writes too (util/csv-cell.ts: CRLF, text quoted, times
 * as ISO 8601 in UTC where the JSON API keeps the interface's epoch seconds),
 * streamed from DuckDB one chunk at a time: a chunk becomes text only once the previous one has
 * been taken by `write` (which waits while the client reads), so a download holds one chunk of
 * rows in memory whatever its size, and the event loop stays free between chunks.
 */
import type { ListRequest } from '../list/index.js';
import { resolveWindow } from '../list/list-request.js';
import { sessionsCsv } from '../util/csv-cell.js';
import type { ParquetReader } from './data-source.js';
import { askedColumns, sessionsSql } from './queries.js';

/**
 * Writes the header line, then the rows, CRLF-terminated (RFC 4180), through `write`; `total` is
 * the count of matches (the rows written are the first MAX_CSV_ROWS of them (queries.ts), as the page sorts).
 */
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
