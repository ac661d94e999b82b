/**
 * The sessions download: a list request's matches as CSV (the columns asked for, else every field;
 * times as ISO 8601 in UTC, `2026-03-01T12:00:00Z`, which a spreadsheet reads as a time, where the
 * API and `sessions --output csv` keep the interface's epoch seconds),
 * streamed from DuckDB one chunk at a time: a chunk becomes text only once the previous one has
 * been taken by `write` (which waits while the client reads), so a download holds one chunk of
 * rows in memory whatever its size, and the event loop stays free between chunks.
 */
import type { ListRequest } from '../list/index.js';
import { resolveWindow } from '../list/list-request.js';
import { csvRecord } from '../util/csv-cell.js';
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
  await write(csvRecord(columns) + '\r\n');
  const window = resolveWindow(req.paging, total);
  if (window.limit <= 0) return;
  const epoch = new Set(leaves.filter((l) => l.kind === 'epoch').map((l) => l.path));
  await reader.stream(sql, [...params, window.limit, window.offset], async (names, rows) => {
    const at = columns.map((c) => names.indexOf(c));
    const time = columns.map((c) => epoch.has(c));
    let text = '';
    for (const row of rows) text += csvRecord(at.map((i, k) => (i < 0 ? null : time[k] ? isoOfEpoch(row[i]) : row[i]))) + '\r\n';
    await write(text);
  }, timeoutMs);
}

/** Epoch seconds (BIGINT) as ISO 8601 UTC without milliseconds; null stays null. */
function isoOfEpoch(v: unknown): string | null {
  return v === null || v === undefined ? null : new Date(Number(v) * 1000).toISOString().replace('.000Z', 'Z');
}
