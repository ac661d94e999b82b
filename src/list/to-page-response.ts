import type { ListPage, SessionView } from './list-request.js';

export interface PageLink {
  readonly href: string;
}

/** The hypermedia page shape of the `page`/`size` variant (HAL, as Spring Data REST writes it). */
export interface PageResponse {
  readonly _embedded: Readonly<Record<string, SessionView[]>>;
  /** `prev` and `next` only when such a page exists. */
  readonly _links: {
    readonly first: PageLink;
    readonly prev?: PageLink;
    readonly self: PageLink;
    readonly next?: PageLink;
    readonly last: PageLink;
  };
  /** `number` is zero-based; `totalPages` is 0 when nothing matched. */
  readonly page: { readonly size: number; readonly totalElements: number; readonly totalPages: number; readonly number: number };
}

export interface PageResponseOptions {
  /** The list's address with its query (filter, sort, …), which the links keep, setting `page` and `size`; may be relative. */
  readonly baseHref: string;
  /** Key of the item list in `_embedded`; default `sessions`. */
  readonly rel?: string;
}

/** The result of a `page`/`size` request in the hypermedia shape; a TypeError for offset/pageSize paging. */
export function toPageResponse(result: ListPage, options: PageResponseOptions): PageResponse {
  if (result.paging.kind !== 'page') {
    throw new TypeError('toPageResponse needs a page/size request; this one used offset/pageSize');
  }
  const { page, size } = result.paging;
  const totalPages = Math.ceil(result.total / size);
  const last = Math.max(totalPages - 1, 0);
  const link = (n: number): PageLink => ({ href: withPage(options.baseHref, n, size) });
  return {
    _embedded: { [options.rel ?? 'sessions']: result.items },
    _links: {
      first: link(0),
      ...(page > 0 ? { prev: link(Math.min(page - 1, last)) } : {}),
      self: link(page),
      ...(page < last ? { next: link(page + 1) } : {}),
      last: link(last),
    },
    page: { size, totalElements: result.total, totalPages, number: page },
  };
}

function withPage(baseHref: string, page: number, size: number): string {
  const [base = ''] = baseHref.split('#', 1);
  const mark = base.indexOf('?');
  const path = mark < 0 ? base : base.slice(0, mark);
  const query = new URLSearchParams(mark < 0 ? '' : base.slice(mark + 1));
  query.delete('offset');
  query.delete('pageSize');
  query.set('page', String(page));
  query.set('size', String(size));
  return `${path}?${query.toString()}`;
}
