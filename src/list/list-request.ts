import type { FilterExpr } from './parse-filter.js';
import { ID_FIELD, TOP_LEVEL_FIELDS, type LeafField, type SessionField } from './session-fields.js';

/** One sort key. `field` is `null` for a name no session field has: it counts as null everywhere, so it never reorders anything. */
export interface SortKey {
  readonly name: string;
  readonly field: LeafField | null;
  readonly descending: boolean;
}

/** `offset`/`pageSize` (the shared conventions, with truncation) or `page`/`size` (hypermedia, zero-based, no truncation). */
export type Paging =
  | { readonly kind: 'offset'; readonly offset: number; readonly pageSize: number }
  | { readonly kind: 'page'; readonly page: number; readonly size: number };

/** A parsed list request, the input of both evaluators. Build it with `parseListRequest`. */
export interface ListRequest {
  readonly filter: FilterExpr | null;
  /** After defaults and `descending=true`: never empty (by default `id` ascending); the tie-breaker is `orderKeys`'. */
  readonly sort: readonly SortKey[];
  /** Fields to return, in the order named; `null`: all fields. */
  readonly attributes: readonly SessionField[] | null;
  /** Session start bounds in whole epoch seconds, from inclusive, to exclusive; `null`: unbounded. */
  readonly startedFrom: number | null;
  readonly startedTo: number | null;
  readonly paging: Paging;
  /** Names no session field has: they count as null (the document's rule), usually a typo callers may warn of. */
  readonly unknownFields: readonly string[];
}

/** A session in the interface shape, restricted to the requested fields; absent values are null. */
export type SessionView = Record<string, unknown>;

/** What both evaluators return: `total` matches before paging, `offset` of the first item after truncation. */
export interface ListPage {
  readonly items: SessionView[];
  readonly total: number;
  readonly offset: number;
  /** Offset paging: the page size after truncation (= `items.length`); page paging: the requested size. */
  readonly pageSize: number;
  readonly paging: Paging;
}

/** The request's known sort keys, then the tie-breaker `id` ascending unless it is a key already. */
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
  const set = new Set(leavesOf(req.attributes ?? TOP_LEVEL_FIELDS));
  return leavesOf(TOP_LEVEL_FIELDS).filter((l) => set.has(l));
}

/** The leaves of the fields, an object's in its order. */
function leavesOf(fields: readonly SessionField[]): LeafField[] {
  return fields.flatMap((f) => (f.kind === 'object' ? [...f.children] : [f]));
}

/** A record in the interface shape from leaf values: `agent.name` as `{ agent: { name } }`. */
export function shapeRecord(leaves: readonly LeafField[], valueOf: (leaf: LeafField) => unknown): SessionView {
  const out: SessionView = {};
  for (const leaf of leaves) {
    const [parent, child] = leaf.path.split('.');
    if (child === undefined) out[leaf.path] = valueOf(leaf);
    else ((out[parent!] ??= {}) as Record<string, unknown>)[child] = valueOf(leaf);
  }
  return out;
}
