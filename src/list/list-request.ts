import type { FilterExpr } from './parse-filter.js';
import { ID_FIELD, TOP_LEVEL_FIELDS, type LeafField, type SessionField } from './session-fields.js';

/** One sort key. `field` is `null` for a name no session field has: it counts as null everywhere, so it never reorders anything. */
export interface SortKey {
  readonly name: string;
  readonly field: LeafField | null;
  readonly descending: boolean;
}

/**
 * Paging as requested: `offset`/`pageSize` (the shared conventions, with truncation) or
 * `page`/`size` (the hypermedia variant, zero-based page number, no truncation).
 */
export type Paging =
  | { readonly kind: 'offset'; readonly offset: number; readonly pageSize: number }
  | { readonly kind: 'page'; readonly page: number; readonly size: number };

/** A parsed list request, the input of both evaluators. Build it with `parseListRequest`. */
export interface ListRequest {
  /** `null`: every record. */
  readonly filter: FilterExpr | null;
  /**
   * The order, after defaults and `descending=true` are applied: never empty (by default `id`
   * ascending). The tie-breaker is not listed; see `orderKeys`.
   */
  readonly sort: readonly SortKey[];
  /** Fields to return, in the order named; `null`: all fields. */
  readonly attributes: readonly SessionField[] | null;
  /** Session start, inclusive, whole epoch seconds; `null`: no lower bound. */
  readonly startedFrom: number | null;
  /** Session start, exclusive, whole epoch seconds; `null`: no upper bound. */
  readonly startedTo: number | null;
  readonly paging: Paging;
  /**
   * Names used in filter, sort or attributeNames that no session field has. They count as null
   * (the document's rule), which is usually a typo: callers may want to warn.
   */
  readonly unknownFields: readonly string[];
}

/** A session in the interface shape, restricted to the requested fields; absent values are null. */
export type SessionView = Record<string, unknown>;

/** What both evaluators return. */
export interface ListPage {
  readonly items: SessionView[];
  /** Records that pass the filter and date range, before paging. */
  readonly total: number;
  /** Position of the first item among those `total` records (after truncation). */
  readonly offset: number;
  /**
   * For offset paging, the page size after truncation (= `items.length`); for page paging, the
   * requested size.
   */
  readonly pageSize: number;
  /** The paging of the request, for `toPageResponse`. */
  readonly paging: Paging;
}

/**
 * The keys both evaluators sort by: the request's known keys, then the tie-breaker `id` ascending
 * unless `id` is already a key. `id` always compares by code point.
 */
export function orderKeys(req: ListRequest): { field: LeafField; descending: boolean }[] {
  const keys = req.sort.flatMap((k) => (k.field ? [{ field: k.field, descending: k.descending }] : []));
  if (!keys.some((k) => k.field === ID_FIELD)) keys.push({ field: ID_FIELD, descending: false });
  return keys;
}

/**
 * Which slice of `total` matching records a request gets. Offset paging truncates as the
 * document says: an offset past the end moves to the last item, a page past the end is cut to
 * what remains. Page paging does not: a page past the end is empty.
 */
export function resolveWindow(paging: Paging, total: number): { offset: number; limit: number; pageSize: number } {
  if (paging.kind === 'offset') {
    const offset = total === 0 ? 0 : Math.min(paging.offset, total - 1);
    const limit = Math.min(paging.pageSize, total - offset);
    return { offset, limit, pageSize: limit };
  }
  const offset = paging.page * paging.size;
  return { offset, limit: offset >= total ? 0 : Math.min(paging.size, total - offset), pageSize: paging.size };
}

/** The page a request gets of `total` matches; `read(limit, offset)` gives its items (not called for an empty page). */
export async function pageOf(req: ListRequest, total: number, read: (limit: number, offset: number) => Promise<SessionView[]>): Promise<ListPage> {
  const window = resolveWindow(req.paging, total);
  const items = window.limit > 0 ? await read(window.limit, window.offset) : [];
  return { items, total, offset: window.offset, pageSize: window.pageSize, paging: req.paging };
}

/** The leaves a request returns, in interface order. */
export function selectedLeaves(req: ListRequest): LeafField[] {
  const wanted = req.attributes ?? TOP_LEVEL_FIELDS;
  const set = new Set<LeafField>();
  for (const f of wanted) {
    if (f.kind === 'object') f.children.forEach((c) => set.add(c));
    else set.add(f);
  }
  return allLeaves().filter((l) => set.has(l));
}

function allLeaves(): LeafField[] {
  return TOP_LEVEL_FIELDS.flatMap((f) => (f.kind === 'object' ? [...f.children] : [f]));
}

/**
 * Builds a record in the interface shape from leaf values: `agent.name` comes back as
 * `{ agent: { name } }`; an object is present whenever one of its fields was asked for, with
 * null for the values the record lacks.
 */
export function shapeRecord(leaves: readonly LeafField[], valueOf: (leaf: LeafField) => unknown): SessionView {
  const out: SessionView = {};
  for (const leaf of leaves) {
    const dot = leaf.path.indexOf('.');
    if (dot < 0) {
      out[leaf.path] = valueOf(leaf);
      continue;
    }
    const parent = leaf.path.slice(0, dot);
    const obj = (out[parent] ??= {}) as Record<string, unknown>;
    obj[leaf.path.slice(dot + 1)] = valueOf(leaf);
  }
  return out;
}
