import fc from 'fast-check';
import type { SessionRecord } from '../../../src/schema/session-fields.js';
import { LEAF_FIELDS } from '../../../src/list/session-fields.js';

/**
 * Characters the generators draw from: ASCII letters of both cases, the non-ASCII look-alikes that
 * case folding and Unicode tables disagree on (Kelvin sign, long s, ß, É), line terminators Java,
 * JavaScript and RE2 treat differently (\r, \u0085, \u2028), spaces (\u00a0, \v), combining
 * marks, supplementary characters (one assigned only in Unicode 14), NUL, a private-use
 * character that UTF-16 order misplaces, and regex metacharacters.
 */
export const ALPHABET = [
  'a', 'b', 'c', 'A', 'B', 'k', 'K', 's', 'S', 'z', 'Z', '0', '1', '9', '_', '-', '.', ' ', '@',
  '\t', '\n', '\r', '\u000b', '\u0085', '\u00a0', '\u2028', 'é', 'É', 'ß', 'ſ', '\u212a', 'u', '\u0308', 'ü',
  '😀', '\u{1F9CC}', '\u0000', '\ue000', '"', '\\', '[', ']', '{', '}', '(', ')', '*', '+', '?', '|', '^', '$', '&', '%',
] as const;

/** Alphabet without the double quote, which a filter's regular expression cannot contain. */
const PATTERN_ALPHABET = ALPHABET.filter((c) => c !== '"');

const cp = (c: string): number => c.codePointAt(0) ?? 0;
const hex = (n: number, width = 1): string => n.toString(16).toUpperCase().padStart(width, '0');

// ---------------------------------------------------------------------------------------------
// Java patterns

type ClassItem =
  | { k: 'char'; c: string }
  | { k: 'range'; lo: string; hi: string }
  | { k: 'esc'; text: string }
  | { k: 'nested'; cls: ClassNode };
interface ClassNode { k: 'class'; negated: boolean; operands: ClassItem[][] }

export type GenNode =
  | { k: 'lit'; c: string; form: number }
  | { k: 'quote'; s: string }
  | { k: 'dot' }
  | { k: 'esc'; text: string }
  | ClassNode
  | { k: 'seq'; items: GenNode[] }
  | { k: 'alt'; alts: GenNode[] }
  | { k: 'group'; open: string; body: GenNode }
  | { k: 'flags'; text: string }
  | { k: 'rep'; body: GenNode; q: string; min: number; max: number | null };

const ESCAPES = ['\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\h', '\\H', '\\v', '\\V', '\\p{Lower}', '\\p{Upper}', '\\p{Alpha}',
  '\\p{Punct}', '\\p{Space}', '\\P{Lower}', '\\p{Alnum}', '\\p{XDigit}', '\\p{Cntrl}', '\\p{Print}'];
const META = new Set('\\^$.|?*+()[]{}"'.split(''));

const charArb = fc.constantFrom(...PATTERN_ALPHABET);

const classItemArb = (depth: number): fc.Arbitrary<ClassItem> => fc.oneof(
  { weight: 4, arbitrary: charArb.map((c): ClassItem => ({ k: 'char', c })) },
  { weight: 2, arbitrary: fc.tuple(charArb, charArb).map(([a, b]): ClassItem => (cp(a) <= cp(b) ? { k: 'range', lo: a, hi: b } : { k: 'range', lo: b, hi: a })) },
  { weight: 1, arbitrary: fc.constantFrom(...ESCAPES).map((text): ClassItem => ({ k: 'esc', text })) },
  { weight: depth > 0 ? 1 : 0, arbitrary: fc.constant(null).chain(() => classArb(depth - 1)).map((cls): ClassItem => ({ k: 'nested', cls })) },
);

const classArb = (depth: number): fc.Arbitrary<ClassNode> => fc.record({
  negated: fc.boolean(),
  operands: fc.array(fc.array(classItemArb(depth), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 2 }),
}).map(({ negated, operands }) => ({ k: 'class', negated, operands }));

const quantArb = fc.oneof(
  fc.constantFrom('*', '+', '?').map((q) => ({ q, min: q === '+' ? 1 : 0, max: q === '?' ? 1 : null })),
  fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 2 }), fc.constantFrom('n', 'n,', 'n,m')).map(([n, extra, shape]) =>
    shape === 'n' ? { q: `{${n}}`, min: n, max: n } : shape === 'n,' ? { q: `{${n},}`, min: n, max: null } : { q: `{${n},${n + extra}}`, min: n, max: n + extra }),
).chain((q) => fc.boolean().map((lazy) => ({ ...q, q: lazy ? `${q.q}?` : q.q })));

function atomArb(depth: number): fc.Arbitrary<GenNode> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.tuple(charArb, fc.nat(9)).map(([c, form]): GenNode => ({ k: 'lit', c, form })) },
    { weight: 2, arbitrary: fc.constant<GenNode>({ k: 'dot' }) },
    { weight: 2, arbitrary: fc.constantFrom(...ESCAPES).map((text): GenNode => ({ k: 'esc', text })) },
    { weight: 3, arbitrary: classArb(depth > 0 ? 1 : 0) },
    {
      weight: depth > 0 ? 3 : 0,
      arbitrary: fc.tuple(fc.constantFrom('(', '(?:', '(?<g>', '(?i:', '(?-i:', '(?s:', '(?d:', '(?is-d:'), fc.constant(null).chain(() => nodeArb(depth - 1)))
        .map(([open, body]): GenNode => ({ k: 'group', open, body })),
    },
  );
}

function pieceArb(depth: number): fc.Arbitrary<GenNode> {
  return fc.oneof(
    { weight: 10, arbitrary: atomArb(depth) },
    { weight: 5, arbitrary: fc.tuple(atomArb(depth), quantArb).map(([body, q]): GenNode => ({ k: 'rep', body, ...q })) },
    { weight: 1, arbitrary: fc.array(fc.constantFrom(...PATTERN_ALPHABET.filter((c) => c !== '\\')), { minLength: 1, maxLength: 3 }).map((cs): GenNode => ({ k: 'quote', s: cs.join('') })) },
    { weight: 1, arbitrary: fc.constantFrom('(?i)', '(?-i)', '(?s)', '(?d)', '(?m)').map((text): GenNode => ({ k: 'flags', text })) },
  );
}

function nodeArb(depth: number): fc.Arbitrary<GenNode> {
  const seq = fc.array(pieceArb(depth), { minLength: 0, maxLength: 4 }).map((items): GenNode => ({ k: 'seq', items }));
  return fc.oneof(
    { weight: 4, arbitrary: seq },
    { weight: 1, arbitrary: fc.array(seq, { minLength: 2, maxLength: 3 }).map((alts): GenNode => ({ k: 'alt', alts })) },
  );
}

/** A pattern tree plus whether it is anchored with `^` / `$` (accepted, and meaningless, at the ends). */
export const patternArb: fc.Arbitrary<{ tree: GenNode; start: boolean; end: boolean }> = fc.record({
  tree: nodeArb(2),
  start: fc.boolean(),
  end: fc.boolean(),
});

/** Java pattern text for a tree; every generated pattern is valid in Java and accepted by the translator. */
export function renderPattern(p: { tree: GenNode; start: boolean; end: boolean }): string {
  return `${p.start ? '^' : ''}${render(p.tree)}${p.end ? '$' : ''}`;
}

function renderChar(c: string, form: number): string {
  const n = cp(c);
  const named: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r', '\u0007': '\\a', '\u001b': '\\e', '\f': '\\f' };
  if (c === '"') return '\\x22';
  switch (form) {
    case 1: return n <= 0xff ? `\\x${hex(n, 2)}` : `\\x{${hex(n)}}`;
    case 2: return `\\x{${hex(n)}}`;
    // Supplementary characters as a surrogate pair of \u escapes, which Java joins into one code point.
    case 3: return c.split('').map((u) => `\\u${hex(u.charCodeAt(0), 4)}`).join('');
    case 4: return n <= 0xff ? `\\0${n.toString(8).padStart(3, '0')}` : `\\x{${hex(n)}}`;
    case 5: return named[c] ?? (META.has(c) ? `\\${c}` : c);
    case 6: return `\\Q${c}\\E`;
    default: return META.has(c) ? `\\${c}` : c;
  }
}

function renderClassChar(c: string): string {
  if (c === '"') return '\\x22';
  return '\\[]^-&'.includes(c) ? `\\${c}` : c;
}

function renderClass(cls: ClassNode): string {
  const item = (it: ClassItem): string => {
    switch (it.k) {
      case 'char': return renderClassChar(it.c);
      case 'range': return `${renderClassChar(it.lo)}-${renderClassChar(it.hi)}`;
      case 'esc': return it.text;
      case 'nested': return renderClass(it.cls);
    }
  };
  return `[${cls.negated ? '^' : ''}${cls.operands.map((op) => op.map(item).join('')).join('&&')}]`;
}

let groupNames = 0;
function render(node: GenNode): string {
  switch (node.k) {
    case 'lit': return renderChar(node.c, node.form);
    case 'quote': return `\\Q${node.s}\\E`;
    case 'dot': return '.';
    case 'esc': return node.text;
    case 'class': return renderClass(node);
    case 'seq': return node.items.map(render).join('');
    case 'alt': return node.alts.map(render).join('|');
    case 'group': return `${node.open === '(?<g>' ? `(?<g${groupNames++}>` : node.open}${render(node.body)})`;
    case 'flags': return node.text;
    case 'rep': {
      // A quantifier after \Q…\E (form 6) would repeat its last character only: wrap it.
      const body = node.body.k === 'lit' && node.body.form === 6 ? `(?:${render(node.body)})` : render(node.body);
      return body + node.q;
    }
  }
}

/** Small deterministic generator for the sampler. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const flipCase = (c: string): string => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase());

/** A string the tree is likely (not certain) to match: the engines decide. */
export function samplePattern(node: GenNode, rnd: () => number): string {
  switch (node.k) {
    case 'lit': return /[A-Za-z]/.test(node.c) && rnd() < 0.2 ? flipCase(node.c) : node.c;
    case 'quote': return node.s;
    case 'dot':
    case 'esc': return pick(rnd, ALPHABET);
    case 'class': {
      const items = node.operands.flat();
      const it = pick(rnd, items);
      if (rnd() < 0.2) return pick(rnd, ALPHABET);
      switch (it.k) {
        case 'char': return it.c;
        case 'range': {
          const n = cp(it.lo) + Math.floor(rnd() * (cp(it.hi) - cp(it.lo) + 1));
          return n >= 0xd800 && n <= 0xdfff ? it.lo : String.fromCodePoint(n);
        }
        case 'esc': return pick(rnd, ALPHABET);
        case 'nested': return samplePattern(it.cls, rnd);
      }
      break;
    }
    case 'seq': return node.items.map((n) => samplePattern(n, rnd)).join('');
    case 'alt': return samplePattern(pick(rnd, node.alts), rnd);
    case 'group': return samplePattern(node.body, rnd);
    case 'flags': return '';
    case 'rep': {
      const count = Math.min(node.min + Math.floor(rnd() * 3), node.max ?? Infinity);
      return Array.from({ length: count }, () => samplePattern(node.body, rnd)).join('');
    }
  }
  return '';
}

/** Strings to try a pattern on: samples, samples with one edit, and random strings. */
export function candidateTexts(node: GenNode, seed: number, count = 6): string[] {
  const rnd = mulberry32(seed);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const kind = i % 3;
    if (kind === 2) {
      out.push(Array.from({ length: Math.floor(rnd() * 5) }, () => pick(rnd, ALPHABET)).join(''));
      continue;
    }
    const s = [...samplePattern(node, rnd)];
    if (kind === 1 && s.length > 0) {
      const at = Math.floor(rnd() * s.length);
      if (rnd() < 0.5) s.splice(at, 1);
      else s.splice(at, 0, pick(rnd, ALPHABET));
    }
    out.push(s.join(''));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Session records and list requests

/** Strings with many ties and near-ties: case variants, leading zeros, unicode, empty. */
const TIE_POOL = ['', 'a', 'A', 'b', 'B', 'ab', 'aB', 'Ab', 'é', 'É', 'e\u0301', 'ß', 'ss', '😀', '\u{1F9CC}', '\ue000', '0012', '012', '12', '2',
  'a b', 'alice@example.com', 'Alice@Example.com', 'bob@example.org', 'Zoë', 'zoe', '\u0000', '日本', '\u212a', 'K'];

const textArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...TIE_POOL) },
  { weight: 2, arbitrary: fc.array(fc.constantFrom(...ALPHABET), { maxLength: 6 }).map((cs) => cs.join('')) },
);

/** Present, null, or absent (undefined: the key is left out). */
function maybe<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null | undefined> {
  return fc.oneof({ weight: 6, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constant(undefined) });
}

const BASE = 1_709_251_200; // 2024-03-01T00:00:00Z
const epochArb = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: BASE, max: BASE + 12 }) },
  { weight: 1, arbitrary: fc.integer({ min: BASE * 2, max: BASE * 2 + 9 }).map((n) => n / 2) }, // half seconds: both sides floor
);

const idArb = fc.oneof(
  fc.uuid(),
  textArb.filter((s) => s !== ''),
);

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const recordBodyArb = fc.record({
  companyId: maybe(fc.constantFrom('c1', 'c2', 'C1')),
  pin: maybe(fc.constantFrom('0012', '012', '12', '999', '')),
  started: maybe(epochArb),
  ended: maybe(epochArb),
  duration: maybe(fc.integer({ min: 0, max: 12 })),
  sessionType: maybe(fc.constantFrom('support', 'Support', 'remoteView', 'remoteview', '')),
  recording: maybe(fc.boolean()),
  recordingUrl: maybe(textArb),
  agent: maybe(fc.record({ id: maybe(textArb), name: maybe(textArb), email: maybe(textArb) }).map(dropUndefined)),
  agentGroupId: maybe(fc.integer({ min: 0, max: 4 })),
  agentIp: maybe(fc.constantFrom('10.0.0.1', '10.0.0.10', '10.0.0.2', '::1')),
  customerIp: maybe(textArb),
  externalFields: maybe(fc.record({
    customerName: maybe(textArb), externalCaseId: maybe(textArb), notes: maybe(textArb),
    accountingInfo: maybe(textArb), customerDeviceType: maybe(textArb), customerOs: maybe(textArb),
  }).map(dropUndefined)),
});

/** Datasets of up to `maxLength` sessions with unique ids. */
export function recordsArb(maxLength: number): fc.Arbitrary<SessionRecord[]> {
  return fc.uniqueArray(idArb, { minLength: 2, maxLength, size: 'medium', selector: (s) => s })
    .chain((ids) => fc.tuple(...ids.map((id) => recordBodyArb.map((body) => dropUndefined({ id, ...body }) as SessionRecord))));
}

/** Every name a request may use for a leaf: interface path and contract column. */
const LEAF_NAMES = LEAF_FIELDS.map((l) => [l.path, l.column] as const);
const UNKNOWN_NAMES = ['nosuch', 'agent.nope', 'Started', 'extracted_at'];
const nameOf = (i: number, alias: boolean): string => LEAF_NAMES[i]![alias ? 1 : 0];

const fieldNameArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(fc.nat(LEAF_NAMES.length - 1), fc.boolean()).map(([i, alias]) => nameOf(i, alias)) },
  { weight: 1, arbitrary: fc.constantFrom(...UNKNOWN_NAMES) },
);

const filterArb: fc.Arbitrary<string> = fc.letrec<{ expr: string; match: string }>((tie) => ({
  match: fc.tuple(fieldNameArb, fc.constantFrom('=', '!=', ' = ', '!= '), fc.oneof(
    { weight: 3, arbitrary: patternArb.map(renderPattern) },
    { weight: 3, arbitrary: fc.constantFrom('', '.*', '.+', '(?i)a.*', '.*@example\\.com', '0+12', '\\d+', 'true', 'false', '1709251\\d{3}',
      '.*[^\\x00-\\x7F].*', '[a-zA-Z]*', '(?i)[a-k]+', '.{0,2}', 'a|b|A|B', 'c1|C1', 'support|remoteView', '10\\.0\\.0\\.\\d', '[0-3]') },
  )).map(([f, op, re]) => `${f}${op}"${re}"`),
  expr: fc.oneof(
    { weight: 3, arbitrary: tie('match') },
    { weight: 1, arbitrary: fc.tuple(tie('expr'), fc.constantFrom('&', '|', ' & ', ' | '), tie('expr')).map(([a, op, b]) => `${a}${op}${b}`) },
    { weight: 1, arbitrary: tie('expr').map((e) => `(${e})`) },
  ),
})).expr;

/** Distinct leaves (so no duplicate sort key), each named by path or column, or an unknown name. */
const sortFieldsArb = fc.uniqueArray(fc.nat(LEAF_NAMES.length - 1), { minLength: 1, maxLength: 3 })
  .chain((idx) => fc.tuple(...idx.map((i) => fc.oneof({ weight: 8, arbitrary: fc.boolean().map((a) => nameOf(i, a)) }, { weight: 1, arbitrary: fc.constant(`nosuch${i}`) }))));

const sortParamsArb: fc.Arbitrary<Record<string, string>> = fc.oneof(
  fc.constant({}),
  sortFieldsArb.chain((names) => fc.array(fc.boolean(), { minLength: names.length, maxLength: names.length })
    .map((dirs) => ({ ascending: names.map((n, i) => `${n}=${dirs[i]}`).join(',') }))),
  sortFieldsArb.chain((names) => fc.array(fc.constantFrom('', ' asc', ' desc', ',desc', ',asc'), { minLength: names.length, maxLength: names.length })
    .map((dirs) => ({ sort: names.map((n, i) => `${n}${dirs[i]}`).join(',') }))),
  sortFieldsArb.map((names) => ({ descending: names.join(',') })),
).chain((p) => fc.constantFrom<Record<string, string>>({}, {}, { descending: 'true' }, { descending: 'false' })
  .map((d) => ('descending' in p ? p : { ...p, ...d })));

const pagingArb: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 4, arbitrary: fc.record({ offset: fc.nat(45), pageSize: fc.integer({ min: 1, max: 45 }) }, { requiredKeys: [] }).map(strings) },
  { weight: 2, arbitrary: fc.record({ page: fc.nat(4), size: fc.integer({ min: 1, max: 12 }) }, { requiredKeys: ['page'] }).map(strings) },
);

function strings(o: Record<string, number>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]));
}

const attributesArb = fc.option(
  fc.uniqueArray(fc.oneof(fieldNameArb, fc.constantFrom('agent', 'externalFields')), { minLength: 1, maxLength: 5 }).map((a) => a.join(',')),
  { nil: undefined },
);

/** An instant in one of the accepted forms: epoch seconds, ISO UTC, ISO with offset and a fraction. */
const formatInstant = (seconds: number, form: number): string => {
  const iso = new Date(seconds * 1000).toISOString().slice(0, 19);
  return form === 0 ? String(seconds) : form === 1 ? `${iso}Z` : form === 2 ? `${iso}.5+00:00` : `${new Date((seconds + 3600) * 1000).toISOString().slice(0, 19)}+01:00`;
};
const instantArb = fc.tuple(fc.integer({ min: BASE - 1, max: BASE + 13 }), fc.nat(3));
/** fromDate not after toDate (a reversed pair is a syntax error, tested elsewhere). */
const datesArb = fc.tuple(fc.option(instantArb, { nil: undefined }), fc.option(instantArb, { nil: undefined })).map(([a, b]) => {
  const [from, to] = a && b && a[0] > b[0] ? [b, a] : [a, b];
  return [from && formatInstant(from[0], from[1] === 2 && to && to[0] === from[0] ? 1 : from[1]), to && formatInstant(to[0], to[1])] as const;
});

/** The parameters of one list request, as a CLI or library user would pass them. */
export const requestParamsArb: fc.Arbitrary<Record<string, string>> = fc.record({
  filter: fc.option(filterArb, { nil: undefined, freq: 3 }),
  sort: sortParamsArb,
  paging: pagingArb,
  attributeNames: attributesArb,
  dates: fc.option(datesArb, { nil: undefined, freq: 2 }),
}).map(({ filter, sort, paging, attributeNames, dates }) => {
  const out: Record<string, string> = { ...sort, ...paging };
  if (filter !== undefined) out['filter'] = filter;
  if (attributeNames !== undefined) out['attributeNames'] = attributeNames;
  const [from, to] = dates ?? [];
  if (from !== undefined) out['fromDate'] = from;
  if (to !== undefined) out['toDate'] = to;
  return out;
});
