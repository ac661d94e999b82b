import { ListSyntaxError } from './list-syntax-error.js';
import type { ListRequest, Paging, SortKey } from './list-request.js';
import { filterFieldRefs, parseFilter } from './parse-filter.js';
import { INSTANT_FORMATS, parseInstant } from './parse-instant.js';
import { ID_FIELD, resolveField, type SessionField } from './session-fields.js';

/**
 * Page size when the request names none. The document's "default 1" is worded as a default of
 * `offset` and cannot be meant as a page size of one; 100 is a common list default.
 */
export const DEFAULT_PAGE_SIZE = 100;

/** The parameters of the shared list conventions, as the document spells them (case-sensitive). */
export const LIST_PARAMETERS = [
  'filter', 'ascending', 'descending', 'sort', 'attributeNames', 'fromDate', 'toDate', 'pageSize', 'offset', 'page', 'size',
] as const;
export type ListParameter = (typeof LIST_PARAMETERS)[number];

/** Parameter values by name: a query string, `URLSearchParams`, or a plain record (e.g. CLI flags). */
export type ListParams = string | URLSearchParams | Readonly<Record<string, string | undefined>>;

export interface ParseListOptions {
  /** Skip parameters that are not list parameters; by default they are errors, so a misspelt `pagesize` is not ignored. */
  readonly ignoreUnknownParameters?: boolean;
}

/** `value` is what is parsed, `raw` what the caller gave; `rawIndex` maps one to the other. */
interface Param {
  readonly name: ListParameter;
  readonly raw: string;
  readonly value: string;
  readonly rawIndex: readonly number[] | null;
}

type Fail = (position: number | null, problem: string, expected: string) => never;

const FIELD_NAME = /^[A-Za-z0-9_.]+$/;

/**
 * A query string and `URLSearchParams` are URL-decoded once, as usual; a plain record's values are
 * percent-decoded once, so encoded forms typed on a command line work too. Throws ListSyntaxError.
 */
export function parseListRequest(params: ListParams, options: ParseListOptions = {}): ListRequest {
  const got = readParams(params, options);
  const filterParam = got.get('filter');
  const filter = filterParam ? parseFilter(filterParam.value, failFor(filterParam)) : null;
  const sort = readSort(got);
  const unknownFields = new Set([...(filter ? filterFieldRefs(filter) : []), ...sort].filter((r) => !r.field).map((r) => r.name));
  const attributes = readAttributes(got.get('attributeNames'), unknownFields);
  const [startedFrom, startedTo] = readDateRange(got);
  return { filter, sort, attributes, startedFrom, startedTo, paging: readPaging(got), unknownFields: [...unknownFields] };
}

function readParams(params: ListParams, options: ParseListOptions): Map<ListParameter, Param> {
  const out = new Map<ListParameter, Param>();
  const add = (name: string, raw: string, percentDecoded: boolean): void => {
    if (!(LIST_PARAMETERS as readonly string[]).includes(name)) {
      if (options.ignoreUnknownParameters) return;
      throw new ListSyntaxError({ parameter: name, input: raw, position: null, problem: `unknown list parameter "${name}"`, expected: `one of ${LIST_PARAMETERS.join(', ')}` });
    }
    const key = name as ListParameter;
    if (out.has(key)) {
      throw new ListSyntaxError({ parameter: name, input: raw, position: null, problem: 'parameter given more than once', expected: 'each parameter once' });
    }
    const { value, rawIndex } = !percentDecoded ? percentDecode(raw) : { value: raw, rawIndex: null };
    // An empty value (a blank form field, an empty flag) counts as not given.
    if (value.trim() !== '') out.set(key, { name: key, raw, value, rawIndex });
  };
  if (typeof params === 'string' || params instanceof URLSearchParams) {
    const search = typeof params === 'string' ? new URLSearchParams(params.startsWith('?') ? params.slice(1) : params) : params;
    for (const [name, value] of search) add(name, value, true);
  } else {
    for (const [name, value] of Object.entries(params)) if (value !== undefined) add(name, value, false);
  }
  return out;
}

/**
 * Decodes `%XX` runs as UTF-8, leaving anything else (a lone `%`, invalid UTF-8) as written.
 * `rawIndex[i]` is the index in `raw` of the text that produced `value[i]`, plus one entry for the end.
 */
export function percentDecode(raw: string): { value: string; rawIndex: number[] } {
  let value = '';
  const rawIndex: number[] = [];
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let i = 0;
  while (i < raw.length) {
    const run = /^(?:%[0-9A-Fa-f]{2})+/.exec(raw.slice(i));
    if (!run) {
      value += raw[i];
      rawIndex.push(i++);
      continue;
    }
    const bytes = Uint8Array.from(run[0].match(/[0-9A-Fa-f]{2}/g)!, (h) => parseInt(h, 16));
    let text: string | null = null;
    try {
      text = decoder.decode(bytes);
    } catch {
      // invalid UTF-8: left as written
    }
    if (text === null) {
      for (let k = 0; k < run[0].length; k++) rawIndex.push(i + k);
      value += run[0];
    } else {
      let byte = 0;
      for (const ch of text) {
        for (let u = 0; u < ch.length; u++) rawIndex.push(i + 3 * byte);
        byte += new TextEncoder().encode(ch).length;
      }
      value += text;
    }
    i += run[0].length;
  }
  rawIndex.push(raw.length);
  return { value, rawIndex };
}

function failFor(p: Param): Fail {
  return (position, problem, expected) => {
    throw new ListSyntaxError({
      parameter: p.name,
      input: p.raw,
      position: position === null ? null : p.rawIndex ? (p.rawIndex[position] ?? p.raw.length) : position,
      problem,
      expected,
    });
  };
}

/** Comma-separated items with their positions, surrounding spaces trimmed. */
function items(value: string): { text: string; at: number }[] {
  let start = 0;
  return value.split(',').map((part) => {
    const item = { text: part.trim(), at: start + part.length - part.trimStart().length };
    start += part.length + 1;
    return item;
  });
}

/** A field name at `at`: checked against the grammar, resolved, refused when it is an object. */
function fieldName(text: string, at: number, fail: Fail, what: string): { name: string; field: SessionField | null } {
  if (!FIELD_NAME.test(text)) {
    const bad = text === '' ? 0 : [...text].findIndex((c) => !/[A-Za-z0-9_.]/.test(c));
    fail(at + Math.max(bad, 0), text === '' ? `empty ${what}` : `"${text[bad] ?? ''}" cannot appear in a field name`, 'a field name of letters, digits, "." and "_"');
  }
  return { name: text, field: resolveField(text) };
}

function sortKey(text: string, at: number, { descending }: { descending: boolean }, fail: Fail): SortKey {
  const { name, field } = fieldName(text, at, fail, 'field name');
  if (field?.kind === 'object') {
    fail(at, `cannot sort by "${name}", an object`, `one of its fields: ${field.children.map((c) => c.path).join(', ')}`);
  }
  return { name, field: field as SortKey['field'], descending };
}

/**
 * `ascending=f=true,g=false`, `sort=f asc,g desc` (or Spring's `sort=f,desc`) and
 * `descending=f,g` each list the keys; only one of them may be given. `descending=true` reverses
 * whatever order results (the default order too); `descending=false` changes nothing.
 */
function readSort(got: Map<ListParameter, Param>): SortKey[] {
  const desc = got.get('descending');
  const flag = desc && /^(true|false)$/.test(desc.value.trim()) ? desc.value.trim() === 'true' : null;
  const sources = (['ascending', 'sort', 'descending'] as const).filter((n) => got.has(n) && !(n === 'descending' && flag !== null));
  if (sources.length > 1) {
    const second = got.get(sources[1]!)!;
    failFor(second)(null, `cannot be combined with ${sources[0]}`, 'one of ascending, sort, descending=<fields> (descending=true may accompany any)');
  }
  let keys: SortKey[] = [];
  const source = sources[0] ? got.get(sources[0])! : undefined;
  if (source) {
    const fail = failFor(source);
    if (source.name === 'ascending') keys = readAscending(source.value, fail);
    else if (source.name === 'sort') keys = readSortItems(source.value, fail);
    else keys = items(source.value).map((it) => sortKey(it.text, it.at, { descending: true }, fail));
    checkDuplicates(keys, source, fail);
  }
  if (keys.length === 0) keys = [{ name: ID_FIELD.path, field: ID_FIELD, descending: false }];
  return flag ? keys.map((k) => ({ ...k, descending: !k.descending })) : keys;
}

function readAscending(value: string, fail: Fail): SortKey[] {
  return items(value).map(({ text, at }) => {
    if (text === '') fail(at, 'empty item', 'a field name with "=true" or "=false"');
    const [, name = '', eq, bool = ''] = /^([^=\s]*)\s*(=?)\s*(.*)$/.exec(text)!;
    if (!eq) fail(at + name.length, `"${name}" has no direction`, '"=true" (ascending) or "=false" (descending)');
    if (bool !== 'true' && bool !== 'false') fail(at + text.length - bool.length, `"${bool}" is not a direction`, 'true or false');
    return sortKey(name, at, { descending: bool === 'false' }, fail);
  });
}

function readSortItems(value: string, fail: Fail): SortKey[] {
  const keys: SortKey[] = [];
  let explicit = false;
  for (const { text, at } of items(value)) {
    if (/^(asc|desc)$/i.test(text)) {
      // Spring's form: sort=field,desc
      const prev = keys.pop();
      if (!prev || explicit) fail(at, `"${text}" does not follow a field name`, 'a field name before the direction');
      keys.push({ ...prev, descending: text.toLowerCase() === 'desc' });
      explicit = true;
      continue;
    }
    const m = /^(\S*)(?:\s+(\S+))?$/.exec(text);
    const name = m?.[1] ?? text;
    const dir = m?.[2];
    if (!m || (dir !== undefined && !/^(asc|desc)$/i.test(dir))) {
      fail(at + name.length + (text.slice(name.length).length - text.slice(name.length).trimStart().length), `unexpected "${text.slice(name.length).trim()}" after the field name`, '"asc", "desc", "," or the end');
    }
    keys.push(sortKey(name, at, { descending: dir?.toLowerCase() === 'desc' }, fail));
    explicit = dir !== undefined;
  }
  return keys;
}

function checkDuplicates(keys: readonly SortKey[], p: Param, fail: Fail): void {
  const seen = new Set<unknown>();
  keys.forEach((k, n) => {
    const id = k.field ?? k.name;
    if (seen.has(id)) {
      const at = items(p.value)[n]?.at ?? null;
      fail(at, `"${k.name}" is already a sort key`, 'each field once');
    }
    seen.add(id);
  });
}

function readAttributes(p: Param | undefined, unknown: Set<string>): SessionField[] | null {
  if (!p) return null;
  const fail = failFor(p);
  const out: SessionField[] = [];
  for (const { text, at } of items(p.value)) {
    const { name, field } = fieldName(text, at, fail, 'attribute name');
    if (!field) unknown.add(name);
    else if (!out.includes(field)) out.push(field);
  }
  return out;
}

/** `fromDate` inclusive, `toDate` exclusive, over the session start; rounded up to whole seconds (start times are whole seconds). */
function readDateRange(got: Map<ListParameter, Param>): [number | null, number | null] {
  const read = (name: 'fromDate' | 'toDate'): number | null => {
    const p = got.get(name);
    if (!p) return null;
    return Math.ceil(parseInstant(p.value.trim(), (pos, problem, expected) => failFor(p)(pos + (p.value.length - p.value.trimStart().length), problem, expected)));
  };
  const from = read('fromDate');
  const to = read('toDate');
  if (from !== null && to !== null && from > to) {
    failFor(got.get('toDate')!)(null, 'toDate is before fromDate', `a date not before fromDate (${INSTANT_FORMATS})`);
  }
  return [from, to];
}

function readPaging(got: Map<ListParameter, Param>): Paging {
  const number = (name: ListParameter, min: number, fallback: number): number => {
    const p = got.get(name);
    if (!p) return fallback;
    const text = p.value;
    const bad = [...text].findIndex((c) => !/[0-9]/.test(c));
    if (bad >= 0) failFor(p)(bad, 'not a whole number', min > 0 ? 'a positive whole number' : 'a non-negative whole number');
    const n = Number(text);
    if (n < min) failFor(p)(null, `${n} is too small`, min > 0 ? 'a positive whole number' : 'a non-negative whole number');
    if (!Number.isSafeInteger(n)) failFor(p)(null, 'number too large', `a whole number up to ${Number.MAX_SAFE_INTEGER}`);
    return n;
  };
  const pageStyle = got.has('page') || got.has('size');
  const offsetStyle = got.has('offset') || got.has('pageSize');
  if (pageStyle && offsetStyle) {
    const p = got.get('page') ?? got.get('size')!;
    failFor(p)(null, 'page/size cannot be combined with offset/pageSize', 'either offset and pageSize, or page and size');
  }
  if (pageStyle) return { kind: 'page', page: number('page', 0, 0), size: number('size', 1, DEFAULT_PAGE_SIZE) };
  return { kind: 'offset', offset: number('offset', 0, 0), pageSize: number('pageSize', 1, DEFAULT_PAGE_SIZE) };
}
