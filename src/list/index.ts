/**
 * The list conventions (paging, sorting, filtering, field selection): one parser, two evaluators
 * that agree, in memory and DuckDB SQL (docs/list-conventions.md). Not exported on purpose: the
 * Java pattern reader's internals, the code-point set and the field catalogue's lookup tables.
 */
export { parseListRequest, percentDecode, DEFAULT_PAGE_SIZE, LIST_PARAMETERS } from './parse-list-request.js';
export type { ListParams, ListParameter, ParseListOptions } from './parse-list-request.js';
export { ListSyntaxError, isListSyntaxError } from './list-syntax-error.js';
export type { ListRequest, ListPage, Paging, SortKey, SessionView } from './list-request.js';
export type { FilterExpr, FieldRef } from './parse-filter.js';
export { evaluateInMemory } from './evaluate-in-memory.js';
export { compileToSql } from './compile-to-sql.js';
export type { CompiledListQuery, ListSource, SqlParam } from './compile-to-sql.js';
export { queryDuckDb } from './query-duckdb.js';
export { toPageResponse } from './to-page-response.js';
export type { PageResponse, PageResponseOptions, PageLink } from './to-page-response.js';
export { compareValues, compareStrings, compareCodePoints } from './compare-values.js';
export { translateJavaPattern } from './java-pattern.js';
export type { TranslatedPattern } from './java-pattern.js';
export { resolveField, knownFieldNames } from './session-fields.js';
export type { SessionField, LeafField, ObjectField, FieldKind } from './session-fields.js';
