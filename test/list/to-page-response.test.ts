import { describe, expect, it } from 'vitest';
import type { ListPage } from '../../src/list/list-request.js';
import { toPageResponse } from '../../src/list/to-page-response.js';

function result(page: number, size: number, total: number): ListPage {
  const offset = page * size;
  const items = Array.from({ length: Math.max(0, Math.min(size, total - offset)) }, (_, i) => ({ id: `s${offset + i}` }));
  return { items, total, offset, pageSize: size, paging: { kind: 'page', page, size } };
}

const href = (page: number, size = 3): { href: string } => ({ href: `/sessions?filter=pin%3D%221%22&page=${page}&size=${size}` });

describe('toPageResponse: _embedded, _links, page', () => {
  it.each([
    ['first of three', 0, 7, { first: href(0), self: href(0), next: href(1), last: href(2) }, 3],
    ['middle', 1, 7, { first: href(0), prev: href(0), self: href(1), next: href(2), last: href(2) }, 3],
    ['last, partly filled', 2, 7, { first: href(0), prev: href(1), self: href(2), last: href(2) }, 3],
    ['past the end: empty, prev points at the last page', 5, 7, { first: href(0), prev: href(2), self: href(5), last: href(2) }, 3],
    ['exactly full pages', 1, 6, { first: href(0), prev: href(0), self: href(1), last: href(1) }, 2],
    ['nothing matched', 0, 0, { first: href(0), self: href(0), last: href(0) }, 0],
  ])('%s', (_, page, total, links, totalPages) => {
    const r = result(page, 3, total);
    expect(toPageResponse(r, { baseHref: '/sessions?filter=pin%3D%221%22&page=9&offset=4&pageSize=2#top' })).toStrictEqual({
      _embedded: { sessions: r.items },
      _links: links,
      page: { size: 3, totalElements: total, totalPages, number: page },
    });
  });

  it('names the embedded list as asked, and works with a bare address', () => {
    const r = toPageResponse(result(0, 2, 1), { baseHref: 'https://api.example/v1/sessions', rel: 'items' });
    expect(Object.keys(r._embedded)).toEqual(['items']);
    expect(r._links.self.href).toBe('https://api.example/v1/sessions?page=0&size=2');
  });

  it('refuses offset/pageSize results', () => {
    const r: ListPage = { items: [], total: 0, offset: 0, pageSize: 0, paging: { kind: 'offset', offset: 0, pageSize: 5 } };
    expect(() => toPageResponse(r, { baseHref: '/x' })).toThrow(TypeError);
  });
});
