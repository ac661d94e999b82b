/**
 * What the page asks of the Parquet dataset. DuckDB computes every aggregate (per day through the
 * `date` partition column, so a date range reads only its partitions); only aggregated rows, or one
 * bounded page of sessions, reach JavaScript. User input reaches SQL as bound parameters only.
 */
import type { DuckDBValue } from '@duckdb/node-api';
import { compileToSql, isListSyntaxError, parseListRequest, type LeafField, type ListPage, type ListRequest } from '../list/index.js';
import { LIST_PARAMETERS } from '../list/parse-list-request.js';
import { pageOf, shapeRecord } from '../list/list-request.js';
import { ParquetReader } from './data-source.js';

/** A request the page (or a person typing a URL) got wrong: answered with `status` and this message. */
export class BadRequestError extends Error {
  constructor(message: string, readonly status = 400) {
    super(message);
  }
}

/** Rows per `date` partition (null: sessions without a start time), cached until the files change. */
function dayCounts(reader: ParquetReader): Promise<Array<{ d: string | null; n: number }>> {
  return reader.cached('per-day', () => reader.rows<{ d: string | null; n: number }>(`SELECT CAST("date" AS VARCHAR) AS d, count(*) AS n FROM ${reader.from} GROUP BY ALL`));
}

/** Stored sessions per `YYYY-MM-DD` (the `date` partition). */
export async function sessionsPerDay(reader: ParquetReader): Promise<Map<string, number>> {
  return new Map((await dayCounts(reader)).filter((r) => r.d !== null).map((r) => [r.d!, r.n]));
}

/** Rows of the dataset; null when there is none. */
export async function parquetRowCount(reader: ParquetReader): Promise<number | null> {
  if (!reader.hasData()) return null;
  return (await dayCounts(reader)).reduce((n, r) => n + r.n, 0);
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

export interface Charts {
  from: string;
  to: string;
  /** Every day of the range with data: sessions and the median duration in seconds. */
  perDay: Array<{ date: string; sessions: number; medianDurationSeconds: number | null }>;
  byType: Array<{ type: string; sessions: number }>;
  topAgents: Array<{ agent: string; sessions: number }>;
}

/** The charts over `from`..`to` (UTC dates, both included); without a range, the latest 30 days that hold data. */
export async function charts(reader: ParquetReader, from?: string, to?: string): Promise<Charts> {
  return reader.cached(`charts:${from ?? ''}:${to ?? ''}`, () => computeCharts(reader, from, to));
}

async function computeCharts(reader: ParquetReader, from?: string, to?: string): Promise<Charts> {
  for (const [name, v] of [['from', from], ['to', to]] as const) {
    if (v !== undefined && (!DATE.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`)))) {
      throw new BadRequestError(`${name} must be a date as YYYY-MM-DD, got ${JSON.stringify(v)}`);
    }
  }
  if (from === undefined || to === undefined) {
    // The latest 30 days, from the first day with data at the earliest.
    const span = (await reader.rows<{ first: string | null; last: string | null }>(`SELECT CAST(min("date") AS VARCHAR) AS first, CAST(max("date") AS VARCHAR) AS last FROM ${reader.from}`))[0];
    const end = to ?? span?.last ?? new Date().toISOString().slice(0, 10);
    to = end;
    if (from === undefined) {
      const month = new Date(Date.parse(`${end}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
      from = span?.first && span.first > month && span.first <= end ? span.first : month;
    }
  }
  if (from > to) throw new BadRequestError(`from (${from}) is after to (${to})`);
  const range = `"date" BETWEEN CAST(? AS DATE) AND CAST(? AS DATE)`;
  const inRange = <T>(select: string, order: string) =>
    reader.rows<T>(`SELECT ${select}, count(*) AS sessions FROM ${reader.from} WHERE ${range} GROUP BY ALL ORDER BY ${order}`, [from, to]);
  const perDay = await inRange<{ date: string; sessions: number; med: number | null }>(
    'CAST("date" AS VARCHAR) AS date, median(duration_seconds) AS med', '1');
  const byType = await inRange<{ type: string; sessions: number }>(
    "coalesce(session_type, '(none)') AS type", 'sessions DESC, type LIMIT 12');
  const topAgents = await inRange<{ agent: string; sessions: number }>(
    "coalesce(agent_name, agent_email, agent_id, '(no agent)') AS agent", 'sessions DESC, agent LIMIT 10');
  const days = perDay.map((r) => ({ date: r.date, sessions: r.sessions, medianDurationSeconds: r.med === null ? null : Number(r.med) }));
  return { from, to, perDay: days, byType, topAgents };
}

/** The largest page the API serves, and the most rows a CSV download holds. */
export const MAX_PAGE_SIZE = 1000;
export const MAX_CSV_ROWS = 100_000;

/** Parses the query string's list parameters (unknown ones refused), with the page bounded. */
export function listRequestOf(query: URLSearchParams, opts: { csv: boolean }): ListRequest {
  const params: Record<string, string> = {};
  for (const [k, v] of query) {
    if (k === 'token') continue;
    if (!(LIST_PARAMETERS as readonly string[]).includes(k)) {
      throw new BadRequestError(`unknown parameter ${JSON.stringify(k)}: expected ${LIST_PARAMETERS.join(', ')}`);
    }
    if (v !== '') params[k] = v;
  }
  if (opts.csv) {
    // A download holds every match, up to MAX_CSV_ROWS.
    for (const k of ['pageSize', 'offset', 'page', 'size']) delete params[k];
    params.pageSize = String(MAX_CSV_ROWS);
  }
  let req: ListRequest;
  try {
    req = parseListRequest(params);
  } catch (err) {
    if (isListSyntaxError(err)) throw new BadRequestError(err.message);
    throw err;
  }
  const size = req.paging.kind === 'offset' ? req.paging.pageSize : req.paging.size;
  if (!opts.csv && size > MAX_PAGE_SIZE) throw new BadRequestError(`a page holds at most ${MAX_PAGE_SIZE} sessions (got ${size}); page through, or download the CSV`);
  return req;
}

/** A list request as SQL over the dataset: its statements, their parameters after the glob, its leaves. */
export function sessionsSql(reader: ParquetReader, req: ListRequest): { sql: string; countSql: string; params: DuckDBValue[]; leaves: LeafField[] } {
  const { sql, countSql, params, leaves } = compileToSql(req, { parquetGlob: reader.glob });
  // compileToSql binds the glob as its first parameter; ParquetReader adds its own (and the account's), so drop ours.
  const from = (text: string) => text.replace('read_parquet(?)', reader.from);
  return { sql: from(sql), countSql: from(countSql), params: params.slice(1) as DuckDBValue[], leaves: [...leaves] };
}

/** How many sessions match the request. */
export async function countSessions(reader: ParquetReader, req: ListRequest): Promise<number> {
  const { countSql, params } = sessionsSql(reader, req);
  return (await reader.rows<{ total: number }>(countSql, params))[0]?.total ?? 0;
}

/** One page of sessions matching the request, from the Parquet dataset. */
export async function querySessions(reader: ParquetReader, req: ListRequest): Promise<ListPage> {
  if (!reader.hasData()) return { items: [], total: 0, offset: 0, pageSize: 0, paging: req.paging };
  const { sql, params, leaves } = sessionsSql(reader, req);
  return pageOf(req, await countSessions(reader, req), async (limit, offset) =>
    (await reader.rows(sql, [...params, limit, offset])).map((row) => shapeRecord(leaves, (leaf) => row[leaf.path] ?? null)),
  );
}

/** The columns asked for (attributeNames) in the order asked, as flat paths; undefined for all. */
export function askedColumns(req: ListRequest): string[] | undefined {
  return req.attributes?.flatMap((f) => (f.kind === 'object' ? f.children : [f])).map((f) => f.path);
}

