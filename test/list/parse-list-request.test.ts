import { describe, expect, it } from 'vitest';
import { ListSyntaxError } from '../../src/list/list-syntax-error.js';
import type { ListRequest } from '../../src/list/list-request.js';
import type { FilterExpr } from '../../src/list/parse-filter.js';
import { DEFAULT_PAGE_SIZE, parseListRequest, percentDecode, type ListParams } from '../../src/list/parse-list-request.js';

/** Compact text of a parsed filter: `field=/regex/`, `(a & b)`, `(a | b)`. */
function show(e: FilterExpr | null): string {
  if (!e) return 'none';
  if (e.type === 'match') return `${e.field.name}${e.negated ? '!=' : '='}/${e.pattern.source}/`;
  return `(${e.operands.map(show).join(e.type === 'and' ? ' & ' : ' | ')})`;
}

function syntaxError(params: ListParams): ListSyntaxError {
  try {
    parseListRequest(params);
  } catch (e) {
    if (e instanceof ListSyntaxError) return e;
    throw e;
  }
  throw new Error(`no error for ${JSON.stringify(params)}`);
}

describe('filter grammar', () => {
  it.each([
    ['agent.email=".*@x\\.com"', 'agent.email=/.*@x\\.com/'],
    ['agent.email!=""', 'agent.email!=//'],
    ['a="1"&b="2"|c="3"', '((a=/1/ & b=/2/) | c=/3/)'],
    ['a="1"|b="2"&c="3"', '(a=/1/ | (b=/2/ & c=/3/))'],
    ['(a="1"|b="2")&c="3"', '((a=/1/ | b=/2/) & c=/3/)'],
    ['a="1"&b="2"&c="3"', '(a=/1/ & b=/2/ & c=/3/)'],
    [' a = "1" & ( b != "2" ) ', '(a=/1/ & b!=/2/)'],
    ['((a="1"))', 'a=/1/'],
    ['notes="a&b|(c) d=e"', 'notes=/a&b|(c) d=e/'],
    ['external_customer_name="x"', 'external_customer_name=/x/'],
    ['A_1.b_2="x"', 'A_1.b_2=/x/'],
  ])('%s', (filter, expected) => {
    expect(show(parseListRequest({ filter }).filter)).toBe(expected);
  });

  it.each([
    [{ filter: 'agent.email%3D%22.*%40x%5C.com%22' }, 'agent.email=/.*@x\\.com/'],
    [{ filter: 'a%3D%221%22%20%26%20b%21%3D%222%22' }, '(a=/1/ & b!=/2/)'],
    ['filter=agent.email%3D%220%2B12%22', 'agent.email=/0+12/'],
    ['?filter=a%3D%22x+y%22', 'a=/x y/'],
    [new URLSearchParams({ filter: 'a="%3D"' }), 'a=/%3D/'],
  ] as [ListParams, string][])('encoded: %j', (params, expected) => {
    expect(show(parseListRequest(params).filter)).toBe(expected);
  });

  it.each([
    ['', 'none'],
    ['   ', 'none'],
  ])('empty filter %j means no filter', (filter, expected) => {
    expect(show(parseListRequest({ filter }).filter)).toBe(expected);
  });

  // [filter, position, a phrase of what was expected]
  it.each([
    ['agent.email', 11, '"=" or "!="'],
    ['agent.email~"x"', 11, '"=" or "!="'],
    ['agent.email=x', 12, 'double quotes'],
    ['agent.email="x', 14, 'cannot contain a double quote'],
    ['="x"', 0, 'field name'],
    ['a="x"&', 6, 'field name'],
    ['a="x" b="y"', 6, '"&", "|"'],
    ['(a="x"', 6, '")"'],
    ['a="x")', 5, '"&", "|"'],
    ['a-b="x"', 1, '"=" or "!="'],
    ['agent="x"', 0, 'agent.id, agent.name, agent.email'],
    ['externalFields!="x"', 0, 'externalFields.customerName'],
    ['a="x*+"', 5, 'greedy'],
    ['a="(?<=x)y"', 3, 'without lookahead or lookbehind'],
    ['a="ok" | b="\\p{L}"', 12, 'POSIX class'],
    ['x="a"|', 6, 'field name'],
    [`${'('.repeat(65)}a="x"${')'.repeat(65)}`, 64, 'flatter'],
  ])('rejects %j at %i', (filter, position, expected) => {
    const e = syntaxError({ filter });
    expect({ parameter: e.parameter, position: e.position, expected: e.expected })
      .toEqual({ parameter: 'filter', position, expected: expect.stringContaining(expected) });
  });

  it('points into the value as the caller wrote it, encoded or not', () => {
    const e = syntaxError({ filter: 'agent.email%3D%22x%2A%2B%22' });
    // The "+" of the possessive quantifier is "%2B" at index 21 of what was passed.
    expect({ input: e.input, position: e.position }).toEqual({ input: 'agent.email%3D%22x%2A%2B%22', position: 21 });
  });

  it('shows the expression with a caret under the position', () => {
    const e = syntaxError({ filter: 'pin="1" ~ x' });
    expect(e.message).toBe([
      'filter: unexpected "~" at position 8; expected "&", "|" or the end of the filter',
      '  pin="1" ~ x',
      '          ^',
    ].join('\n'));
  });
});

const keys = (req: ListRequest): string[] => req.sort.map((k) => `${k.name}:${k.descending ? 'desc' : 'asc'}`);

describe('sorting parameters', () => {
  it.each([
    [{}, ['id:asc']],
    [{ ascending: 'started=true,agent.name=false' }, ['started:asc', 'agent.name:desc']],
    [{ ascending: 'started%3Dtrue%2Cagent.name%3Dfalse' }, ['started:asc', 'agent.name:desc']],
    [{ ascending: ' started = true , pin=false ' }, ['started:asc', 'pin:desc']],
    [{ ascending: 'started_at=false' }, ['started_at:desc']],
    [{ sort: 'started asc,agent.name' }, ['started:asc', 'agent.name:asc']],
    [{ sort: 'started desc,pin ASC' }, ['started:desc', 'pin:asc']],
    [{ sort: 'started%20desc' }, ['started:desc']],
    [{ sort: 'started,desc,pin' }, ['started:desc', 'pin:asc']],
    [{ sort: 'started,asc' }, ['started:asc']],
    [{ descending: 'true' }, ['id:desc']],
    [{ descending: 'false' }, ['id:asc']],
    [{ descending: 'true', ascending: 'pin=true,started=false' }, ['pin:desc', 'started:asc']],
    [{ descending: 'true', sort: 'pin' }, ['pin:desc']],
    [{ descending: 'pin,started' }, ['pin:desc', 'started:desc']],
    [{ ascending: 'nosuch=true' }, ['nosuch:asc']],
  ] as [Record<string, string>, string[]][])('%j', (params, expected) => {
    expect(keys(parseListRequest(params))).toEqual(expected);
  });

  it('reports sort fields that do not exist (they count as null)', () => {
    expect(parseListRequest({ ascending: 'nosuch=true,pin=true' }).unknownFields).toEqual(['nosuch']);
  });

  // [params, parameter at fault, position, a phrase of what was expected]
  it.each([
    [{ ascending: 'started' }, 'ascending', 7, '"=true"'],
    [{ ascending: 'started=yes' }, 'ascending', 8, 'true or false'],
    [{ ascending: 'started=true,,pin=true' }, 'ascending', 13, 'field name'],
    [{ ascending: 'agent=true' }, 'ascending', 0, 'agent.id'],
    [{ ascending: 'started=true,started_at=false' }, 'ascending', 13, 'each field once'],
    [{ ascending: 'st@rted=true' }, 'ascending', 2, 'field name'],
    [{ sort: 'pin up' }, 'sort', 4, '"asc", "desc"'],
    [{ sort: 'desc' }, 'sort', 0, 'field name before the direction'],
    [{ sort: 'pin desc,desc' }, 'sort', 9, 'field name before the direction'],
    [{ sort: 'a$b' }, 'sort', 1, 'field name'],
    [{ ascending: 'pin=true', sort: 'pin' }, 'sort', null, 'one of ascending, sort'],
    [{ sort: 'pin', descending: 'pin' }, 'descending', null, 'one of ascending, sort'],
  ] as [Record<string, string>, string, number | null, string][])('rejects %j', (params, parameter, position, expected) => {
    const e = syntaxError(params);
    expect({ parameter: e.parameter, position: e.position, expected: e.expected })
      .toEqual({ parameter, position, expected: expect.stringContaining(expected) });
  });
});

describe('paging parameters', () => {
  it.each([
    [{}, { kind: 'offset', offset: 0, pageSize: DEFAULT_PAGE_SIZE }],
    [{ pageSize: '5' }, { kind: 'offset', offset: 0, pageSize: 5 }],
    [{ offset: '3', pageSize: '2' }, { kind: 'offset', offset: 3, pageSize: 2 }],
    [{ offset: '0' }, { kind: 'offset', offset: 0, pageSize: DEFAULT_PAGE_SIZE }],
    [{ page: '2', size: '10' }, { kind: 'page', page: 2, size: 10 }],
    [{ size: '5' }, { kind: 'page', page: 0, size: 5 }],
    [{ page: '1' }, { kind: 'page', page: 1, size: DEFAULT_PAGE_SIZE }],
  ] as [Record<string, string>, unknown][])('%j', (params, expected) => {
    expect(parseListRequest(params).paging).toEqual(expected);
  });

  it.each([
    [{ pageSize: '0' }, 'pageSize', null, 'positive'],
    [{ pageSize: '-1' }, 'pageSize', 0, 'positive'],
    [{ pageSize: '1.5' }, 'pageSize', 1, 'positive'],
    [{ offset: 'ten' }, 'offset', 0, 'non-negative'],
    [{ offset: '-1' }, 'offset', 0, 'non-negative'],
    [{ offset: '99999999999999999999' }, 'offset', null, 'up to'],
    [{ size: '0' }, 'size', null, 'positive'],
    [{ page: '-1' }, 'page', 0, 'non-negative'],
    [{ page: '1', offset: '1' }, 'page', null, 'either offset and pageSize, or page and size'],
  ] as [Record<string, string>, string, number | null, string][])('rejects %j', (params, parameter, position, expected) => {
    const e = syntaxError(params);
    expect({ parameter: e.parameter, position: e.position, expected: e.expected })
      .toEqual({ parameter, position, expected: expect.stringContaining(expected) });
  });
});

describe('fromDate and toDate', () => {
  const BASE = 1_709_251_200; // 2024-03-01T00:00:00Z
  it.each([
    ['1709251200', BASE],
    ['0', 0],
    ['2024-03-01', BASE],
    ['2024-03-01T00:00:00Z', BASE],
    ['2024-03-01T00:00Z', BASE],
    ['2024-03-01t00:00:00z'.replace('t', 'T'), BASE],
    ['2024-03-01T01:00:00+01:00', BASE],
    ['2024-03-01T01:00+0100', BASE],
    ['2024-02-29T19:00:00-05:00', BASE],
    ['2024-03-01 00:00:00Z', BASE],
    ['2024-03-01%2000:00:00Z', BASE],
    ['2024-03-01T00:00:00', BASE],
    ['2024-03-01T00:00:00.000Z', BASE],
    ['2024-03-01T00:00:00.001Z', BASE + 1],
    ['2024-02-29T23:59:59.999Z', BASE],
    ['0099-01-01', -59042995200],
  ])('%s is %i (rounded up to whole seconds)', (text, seconds) => {
    expect(parseListRequest({ fromDate: text }).startedFrom).toBe(seconds);
    expect(parseListRequest({ toDate: text }).startedTo).toBe(seconds);
  });

  it.each([
    ['2024-13-01', 5, 'month'],
    ['2024-02-30', 8, 'day from 01 to 29'],
    ['2023-02-29', 8, 'day from 01 to 28'],
    ['2024-03-01T24:00Z', 11, 'hour'],
    ['2024-03-01T23:60Z', 14, 'minute'],
    ['2024-03-01T23:59:60Z', 17, 'second'],
    ['2024-03-01T00:00+19:00', 16, 'offset'],
    ['yesterday', 0, 'epoch seconds'],
    ['2024-3-1', 0, 'epoch seconds'],
    ['1709251200.5', 0, 'epoch seconds'],
  ])('rejects fromDate %j at %i', (fromDate, position, expected) => {
    const e = syntaxError({ fromDate });
    expect({ parameter: e.parameter, position: e.position, expected: e.expected })
      .toEqual({ parameter: 'fromDate', position, expected: expect.stringContaining(expected) });
  });

  it('rejects a toDate before the fromDate; equal dates select nothing', () => {
    expect(syntaxError({ fromDate: '2024-03-02', toDate: '2024-03-01' }).parameter).toBe('toDate');
    expect(parseListRequest({ fromDate: '2024-03-01', toDate: '2024-03-01' })).toMatchObject({ startedFrom: BASE, startedTo: BASE });
  });
});

describe('attributeNames', () => {
  const paths = (params: Record<string, string>): string[] | null => parseListRequest(params).attributes?.map((f) => f.path) ?? null;
  it.each([
    [{}, null],
    [{ attributeNames: '' }, null],
    [{ attributeNames: 'id,agent.name,started_at' }, ['id', 'agent.name', 'started']],
    [{ attributeNames: 'id%2Cpin' }, ['id', 'pin']],
    [{ attributeNames: ' id , pin ' }, ['id', 'pin']],
    [{ attributeNames: 'agent' }, ['agent']],
    [{ attributeNames: 'id,id,session_id' }, ['id']],
    [{ attributeNames: 'nosuch' }, []],
  ] as [Record<string, string>, string[] | null][])('%j', (params, expected) => {
    expect(paths(params)).toEqual(expected);
  });

  it('reports names that do not exist', () => {
    expect(parseListRequest({ attributeNames: 'id,nosuch,Agent.name' }).unknownFields).toEqual(['nosuch', 'Agent.name']);
  });

  it.each([
    ['id,,pin', 3],
    ['id,a b', 4],
  ])('rejects %j at %i', (attributeNames, position) => {
    expect(syntaxError({ attributeNames }).position).toBe(position);
  });
});

describe('parameters', () => {
  it('rejects a name that is not a list parameter, unless asked to skip it', () => {
    expect(syntaxError({ pagesize: '5' }).message).toContain('unknown list parameter "pagesize"');
    expect(parseListRequest('accountKey=1&pageSize=5', { ignoreUnknownParameters: true }).paging).toEqual({ kind: 'offset', offset: 0, pageSize: 5 });
  });

  it('rejects a parameter given twice', () => {
    expect(syntaxError('pageSize=5&pageSize=6').message).toContain('more than once');
  });

  it('skips undefined values of a record (unset CLI flags)', () => {
    expect(parseListRequest({ filter: undefined, pageSize: '3' }).filter).toBeNull();
  });

  it('treats an empty value as not given', () => {
    const req = parseListRequest('filter=&ascending=&pageSize=%20&fromDate=&attributeNames=');
    expect(req).toMatchObject({ filter: null, attributes: null, startedFrom: null, paging: { pageSize: DEFAULT_PAGE_SIZE } });
    expect(req.sort.map((k) => k.name)).toEqual(['id']);
  });
});

describe('percentDecode', () => {
  it.each([
    ['a%3Db', 'a=b', [0, 1, 4, 5]],
    ['%22x%22', '"x"', [0, 3, 4, 7]],
    ['100%', '100%', [0, 1, 2, 3, 4]],
    ['%zz', '%zz', [0, 1, 2, 3]],
    ['%C3%A9!', 'é!', [0, 6, 7]],
    ['%F0%9F%98%80', '😀', [0, 0, 12]],
    ['%C3', '%C3', [0, 1, 2, 3]],
    ['a+b', 'a+b', [0, 1, 2, 3]],
  ])('%j', (raw, value, rawIndex) => {
    expect(percentDecode(raw)).toEqual({ value, rawIndex });
  });
});
