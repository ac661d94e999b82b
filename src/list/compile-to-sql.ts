import { orderKeys, selectedLeaves, type ListRequest } from './list-request.js';
import type { FilterExpr } from './parse-filter.js';
import { ID_FIELD, STARTED_FIELD, type LeafField } from './session-fields.js';

/**
 * A table with the contract's columns, or the Parquet dataset; with `account`, only that account's
 * rows (docs/accounts.md); with `withAccount`, each row also says its account.
 */
export type ListSource = ({ readonly table: string } | { readonly parquetGlob: string }) & { readonly account?: string; readonly withAccount?: boolean };

export type SqlParam = string | number | boolean | null;

export interface CompiledListQuery {
  /** The page; placeholders: `params`, then LIMIT, then OFFSET. */
  readonly sql: string;
  /** The number of matches; placeholders: `params`. */
  readonly countSql: string;
  /** Every user-supplied value (regular expressions, dates, the Parquet glob), in placeholder order. */
  readonly params: readonly SqlParam[];
  /** The leaves `sql` returns, in column order, each column named after the leaf's interface path. */
  readonly leaves: readonly LeafField[];
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** The result column holding a row's account with `withAccount` (no session field has this name). */
export const ACCOUNT_COLUMN = 'account';

/**
 * A list request as DuckDB SQL with the answer of `evaluateInMemory`. Values travel as bound
 * parameters; the only identifiers in the text are contract columns and the table name, which must
 * be a plain (optionally schema-qualified) identifier. Truncation needs the count before the page.
 */
export function compileToSql(req: ListRequest, source: ListSource): CompiledListQuery {
  const params: SqlParam[] = [];
  const from = sourceSql(source, params);

  const where: string[] = [];
  for (const [bound, op] of [[req.startedFrom, '>='], [req.startedTo, '<']] as const) {
    if (bound === null) continue;
    where.push(`${q(STARTED_FIELD.column)} ${op} to_timestamp(?)`);
    params.push(bound);
  }
  if (req.filter) where.push(filterSql(req.filter, params));
  const whereSql = where.length === 0 ? '' : `\nWHERE ${where.join('\n  AND ')}`;

  const leaves = selectedLeaves(req);
  const columns = [...(source.withAccount ? [`${q('account')} AS ${q(ACCOUNT_COLUMN)}`] : []), ...leaves.map((l) => `${valueSql(l)} AS ${q(l.path)}`)];
  const select = columns.length === 0 ? '1 AS "_"' : columns.join(',\n       ');
  const order = orderKeys(req).map(({ field, descending }) => orderSql(field, descending)).join(',\n         ');

  const sql = `SELECT ${select}\nFROM ${from}${whereSql}\nORDER BY ${order}\nLIMIT ? OFFSET ?`;
  return { sql, countSql: `SELECT count(*) AS total\nFROM ${from}${whereSql}`, params, leaves };
}

function sourceSql(source: ListSource, params: SqlParam[]): string {
  let from: string;
  if ('parquetGlob' in source) {
    params.push(source.parquetGlob);
    from = 'read_parquet(?)';
  } else {
    if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$/.test(source.table)) {
      throw new TypeError(`table name "${source.table}" is not a plain identifier`);
    }
    from = source.table.split('.').map(q).join('.');
  }
  if (source.account === undefined) return from;
  params.push(source.account);
  return `(SELECT * FROM ${from} WHERE "account" = ?) AS s`;
}

/** Contract column names and interface paths hold no double quote; quoting keeps keywords safe. */
function q(identifier: string): string {
  return `"${identifier}"`;
}

/** Whole epoch seconds, floored, as the in-memory side reads epoch fields. */
function epochSeconds(column: string): string {
  return `CAST(floor(epoch_us(${q(column)}) / 1000000.0) AS BIGINT)`;
}

function valueSql(leaf: LeafField): string {
  return leaf.kind === 'epoch' ? epochSeconds(leaf.column) : q(leaf.column);
}

/** The text a regular expression sees: '' for null, decimal for numbers, true/false for booleans. */
function textSql(leaf: LeafField | null): string {
  if (!leaf) return "''";
  return leaf.kind === 'string' ? `coalesce(${q(leaf.column)}, '')` : `coalesce(CAST(${valueSql(leaf)} AS VARCHAR), '')`;
}

function filterSql(expr: FilterExpr, params: SqlParam[]): string {
  switch (expr.type) {
    case 'and':
    case 'or':
      return `(${expr.operands.map((e) => filterSql(e, params)).join(expr.type === 'and' ? ' AND ' : ' OR ')})`;
    case 'match':
      params.push(expr.pattern.re2);
      return `${expr.negated ? 'NOT ' : ''}regexp_full_match(${textSql(expr.field.field)}, ?)`;
  }
}

/**
 * Ascending puts nulls first, descending reverses everything (nulls last). Strings: US-ASCII
 * letters without case, then code points; `id` by code point only. Binary collation throughout,
 * whatever the connection's `default_collation` says.
 */
function orderSql(leaf: LeafField, descending: boolean): string {
  const dir = descending ? 'DESC NULLS LAST' : 'ASC NULLS FIRST';
  const col = q(leaf.column);
  if (leaf === ID_FIELD) return `${col} COLLATE "binary" ${dir}`;
  if (leaf.kind === 'string') return `${asciiLowerSql(col)} COLLATE "binary" ${dir}, ${col} COLLATE "binary" ${dir}`;
  return `${valueSql(leaf)} ${dir}`;
}

/**
 * US-ASCII letters lowered, nothing else. `translate` alone costs seconds per million rows;
 * `lower` is fast and, on text that is all ASCII (as many bytes as characters), lowers exactly
 * A–Z, whatever Unicode version DuckDB carries.
 */
function asciiLowerSql(col: string): string {
  return `CASE WHEN strlen(${col}) = length(${col}) THEN lower(${col}) ELSE translate(${col}, '${UPPER}', '${UPPER.toLowerCase()}') END`;
}
