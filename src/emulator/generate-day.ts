/**
 * Generates one UTC day of sessions from a PRNG seeded by (seed, day), so any day can be made on its
 * own and always comes out the same. Records are complete and describe the session once ended (the
 * store hides what "now" has not reached). They are written straight to JSON text, without keeping
 * objects, because serving them is what a benchmark spends the emulator's time on.
 */
import { JsonBytes, fragment, innerFragment, jsonFragment } from './json-bytes.js';
import { Random, cumulativeOf, pickCumulative } from './prng.js';
import type { SessionIdCodec } from './session-ids.js';
import {
  AGENTS, COMPANY_IDS, COMPANY_WEIGHTS, CUSTOMER_ORGS, CUSTOMER_V4_PREFIXES, DEVICE_TYPES,
  DEVICE_TYPE_WEIGHTS, FIRST_NAMES, GROUPS, HOUR_WEIGHTS, LAST_NAMES, LONG_NOTE_PIECES, NOTES, OPERATING_SYSTEMS,
  SESSION_TYPES, SESSION_TYPE_WEIGHTS, WEEKDAY_WEIGHTS,
} from './vocabulary.js';

export const DAY_SECONDS = 86_400;
/** No generated session lasts longer than this; the overlap rule looks back this far. */
export const MAX_DURATION_SECONDS = 10 * 3_600;

/** The order of the fields in every generated record: the SDL's (the fast path relies on it). */
export const SESSION_FIELD_NAMES = [
  'id', 'companyId', 'pin', 'started', 'ended', 'duration', 'sessionType', 'recording', 'recordingUrl',
  'agent', 'agentGroupId', 'agentIp', 'customerIp', 'externalFields',
] as const;
export const AGENT_FIELD_NAMES = ['id', 'name', 'email'] as const;
export const EXTERNAL_FIELD_NAMES = [
  'customerName', 'externalCaseId', 'notes', 'accountingInfo', 'customerDeviceType', 'customerOs',
] as const;

export interface GenerateDayOptions {
  seed: number;
  /** Average over a week; weekdays get more, weekends fewer. */
  sessionsPerDay: number;
  ids: SessionIdCodec;
  longNotes?: LongNotes;
}

/**
 * Notes of 1–2 KB with escapes and non-ASCII instead of the short ones; which sessions get one is
 * drawn as for short notes. `loneSurrogateRate`: the share ending in a lone `\ud83d` (an emoji cut in half).
 */
export type LongNotes = { loneSurrogateRate?: number };

const HOUR_CUMULATIVE = cumulativeOf(HOUR_WEIGHTS);
const COMPANY_CUMULATIVE = cumulativeOf(COMPANY_WEIGHTS);
const TYPE_CUMULATIVE = cumulativeOf(SESSION_TYPE_WEIGHTS);
const DEVICE_CUMULATIVE = cumulativeOf(DEVICE_TYPE_WEIGHTS);

/**
 * One generated day: the JSON text of its records (`r0,r1,...`, sorted by started then id, as
 * JSON.stringify would write them) and the columns the store picks windows by without parsing.
 */
export interface GeneratedDay {
  readonly day: number;
  readonly count: number;
  readonly started: Int32Array;
  /** When each session ends (or will end); the store shows it as running until then. */
  readonly ended: Int32Array;
  readonly text: Buffer;
  /** Byte offset of each record in `text`; offsets[count] is text.length + 1. */
  readonly offsets: Uint32Array;
}

/** The sessions that start on `day` (UTC). */
export function generateDay(options: GenerateDayOptions, day: number): GeneratedDay {
  const rng = new Random(options.seed, day, 0xda7);
  // The long notes draw from their own stream, so every other field is the same as without them.
  const long = options.longNotes ? { rng: new Random(options.seed, day, 0x1075), lone: options.longNotes.loneSurrogateRate ?? 0 } : undefined;
  const dayStart = day * DAY_SECONDS;
  // Sunday first; 1970-01-01 was a Thursday.
  const mean = options.sessionsPerDay * (WEEKDAY_WEIGHTS[(((day + 4) % 7) + 7) % 7] as number);
  const count = Math.max(0, Math.round(mean * (0.85 + 0.3 * rng.next())));
  // Each record is written to `raw` as it is made (in generation order, which fixes the draws and
  // so the data), then copied in sorted order; no per-record string outlives its writing.
  const raw = new JsonBytes(count * (long ? 2_400 : 640) + 1_024);
  const rawStart = new Uint32Array(count + 1);
  const startedAt = new Int32Array(count);
  const endedAt = new Int32Array(count);
  const ids: string[] = new Array(count);
  let n = 0;
  const add = (t: number, forcedType: string | undefined): void => {
    rawStart[n] = raw.length;
    ids[n] = options.ids.encode(day, n);
    startedAt[n] = t;
    endedAt[n] = t + writeSession(raw, rng, ids[n] as string, t, forcedType, long);
    n++;
  };
  // Scheduled unattended jobs start exactly on the hour, midnight included: a closed window whose
  // end is midnight returns them, and so does the next window starting at midnight.
  for (const hour of [0, 0, 12]) {
    if (n < count && rng.chance(0.35)) add(dayStart + hour * 3_600, 'unattended');
  }
  while (n < count) add(dayStart + pickCumulative(rng, HOUR_CUMULATIVE) * 3_600 + rng.int(3_600), undefined);
  rawStart[count] = raw.length;

  const order = Array.from({ length: count }, (_, k) => k);
  order.sort((a, b) => {
    const d = (startedAt[a] as number) - (startedAt[b] as number);
    if (d !== 0) return d;
    const ia = ids[a] as string;
    const ib = ids[b] as string;
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  });
  const text = Buffer.allocUnsafe(Math.max(0, raw.length + count - 1));
  const started = new Int32Array(count);
  const ended = new Int32Array(count);
  const offsets = new Uint32Array(count + 1);
  let pos = 0;
  for (let k = 0; k < count; k++) {
    const i = order[k] as number;
    if (k > 0) text[pos++] = 0x2c; // ','
    offsets[k] = pos;
    pos += raw.bytes.copy(text, pos, rawStart[i], rawStart[i + 1]);
    started[k] = startedAt[i] as number;
    ended[k] = endedAt[i] as number;
  }
  offsets[count] = pos + 1;
  return { day, count, started, ended, text, offsets };
}

/** `,"key":` of every field, `{"key":` of the first of an object: the keys in SDL order, pre-encoded. */
const KEY = Object.fromEntries([...SESSION_FIELD_NAMES, ...EXTERNAL_FIELD_NAMES].map((k) => [
  k, fragment(`${k === 'id' || k === 'customerName' ? '{' : ','}"${k}":`),
])) as Record<(typeof SESSION_FIELD_NAMES)[number] | (typeof EXTERNAL_FIELD_NAMES)[number], Uint8Array>;
const URL_START = fragment('"https://recordings.example.com/v1/');
const URL_END = fragment('.mp4"');
const V6_PREFIX = fragment('"2001:db8:');
const AGENT_JSON = AGENTS.map((a) => jsonFragment({ id: a.id, name: a.name, email: a.email }));
const OFFICE_IP_JSON = GROUPS.map((g) => jsonFragment(g.officeIp));
const ORG_JSON = CUSTOMER_ORGS.map((o) => jsonFragment(o));
const FIRST_INNER = FIRST_NAMES.map(innerFragment);
const LAST_INNER = LAST_NAMES.map(innerFragment);
const NOTES_JSON = NOTES.map((n) => jsonFragment(n));
const DEVICE_JSON = DEVICE_TYPES.map((d) => jsonFragment(d));
const OS_JSON = new Map(Object.entries(OPERATING_SYSTEMS).map(([d, list]) => [d, list.map((o) => jsonFragment(o))]));

const QUOTE = 0x22;

/** Writes one full record (every field, SDL order) and returns its duration. */
function writeSession(w: JsonBytes, rng: Random, id: string, started: number, forcedType: string | undefined, long: LongNoteStream | undefined): number {
  const sessionType = forcedType ?? (SESSION_TYPES[pickCumulative(rng, TYPE_CUMULATIVE)] as string);
  const duration = drawDuration(rng, sessionType);
  const agentIndex = rng.chance(0.03) ? -1 : rng.int(AGENTS.length);
  const groupIndex = agentIndex < 0 ? -1 : (AGENTS[agentIndex] as (typeof AGENTS)[number]).groupIndex;
  const group = GROUPS[groupIndex];
  const companyId = COMPANY_IDS[group ? group.company : pickCumulative(rng, COMPANY_CUMULATIVE)] as string;

  w.raw(KEY.id);
  w.quoted(id);
  w.raw(KEY.companyId);
  w.quoted(companyId);
  w.raw(KEY.pin);
  if (sessionType === 'unattended') w.null();
  else if (rng.chance(0.01)) w.quoted('');
  else {
    w.byte(QUOTE);
    w.padded(rng.int(1_000_000), 6);
    w.byte(QUOTE);
  }
  w.raw(KEY.started);
  w.int(started);
  w.raw(KEY.ended);
  w.int(started + duration);
  w.raw(KEY.duration);
  w.int(duration);
  w.raw(KEY.sessionType);
  w.quoted(sessionType);
  w.raw(KEY.recording);
  const recording = rng.chance(0.3);
  w.ascii(recording ? 'true' : 'false');
  w.raw(KEY.recordingUrl);
  if (recording) {
    w.raw(URL_START);
    w.ascii(companyId);
    w.byte(0x2f); // '/'
    w.ascii(id);
    w.raw(URL_END);
  } else w.null();
  w.raw(KEY.agent);
  if (agentIndex < 0) w.null();
  else w.raw(AGENT_JSON[agentIndex] as Uint8Array);
  w.raw(KEY.agentGroupId);
  if (group) w.int(group.id);
  else w.null();
  w.raw(KEY.agentIp);
  if (!group) w.null();
  else if (rng.chance(0.6)) w.raw(OFFICE_IP_JSON[groupIndex] as Uint8Array);
  else if (rng.chance(0.1)) writeV6(w, rng);
  else writeV4(w, rng);
  w.raw(KEY.customerIp);
  if (rng.chance(0.01)) w.null();
  else if (rng.chance(0.15)) writeV6(w, rng);
  else writeV4(w, rng);
  w.raw(KEY.externalFields);
  if (rng.chance(0.08)) w.null();
  else writeExternalFields(w, rng, long);
  w.byte(0x7d); // '}'
  return duration;
}

/** Log-normal around nine minutes, a few zero-length failures, unattended jobs run longer. */
function drawDuration(rng: Random, sessionType: string): number {
  if (rng.chance(0.005)) return 0;
  const median = sessionType === 'unattended' ? 1_800 : sessionType === 'chat' ? 300 : 540;
  const d = Math.round(Math.exp(Math.log(median) + 1.15 * rng.normal()));
  return Math.min(MAX_DURATION_SECONDS, Math.max(5, d));
}

/** An externalFields object. */
function writeExternalFields(w: JsonBytes, rng: Random, long: LongNoteStream | undefined): void {
  w.raw(KEY.customerName);
  const r = rng.next();
  if (r < 0.02) w.null();
  else if (r < 0.35) w.raw(ORG_JSON[rng.int(ORG_JSON.length)] as Uint8Array);
  else {
    w.byte(QUOTE);
    w.raw(FIRST_INNER[rng.int(FIRST_INNER.length)] as Uint8Array);
    w.byte(0x20);
    w.raw(LAST_INNER[rng.int(LAST_INNER.length)] as Uint8Array);
    w.byte(QUOTE);
  }
  w.raw(KEY.externalCaseId);
  writeCode(w, rng, 'CASE-', 6, 0.6, 0.85);
  w.raw(KEY.notes);
  if (rng.chance(0.7)) {
    const short = rng.int(NOTES_JSON.length);
    if (long) writeLongNote(w, long);
    else w.raw(NOTES_JSON[short] as Uint8Array);
  } else w.null();
  w.raw(KEY.accountingInfo);
  writeCode(w, rng, 'CC-', 4, 0.2, 0.7);
  w.raw(KEY.customerDeviceType);
  const device = pickCumulative(rng, DEVICE_CUMULATIVE);
  w.raw(DEVICE_JSON[device] as Uint8Array);
  w.raw(KEY.customerOs);
  const systems = OS_JSON.get(DEVICE_TYPES[device] as string) as Uint8Array[];
  w.raw(systems[rng.int(systems.length)] as Uint8Array);
  w.byte(0x7d);
}

/** `"PREFIX0042"` (`digits` digits) below `code`, `""` below `empty`, else null: one draw, then the number's. */
function writeCode(w: JsonBytes, rng: Random, prefix: string, digits: number, code: number, empty: number): void {
  const r = rng.next();
  if (r < code) {
    w.ascii(`"${prefix}`);
    w.padded(rng.int(10 ** digits), digits);
    w.byte(QUOTE);
  } else if (r < empty) w.quoted('');
  else w.null();
}

type LongNoteStream = { rng: Random; lone: number };
const LONG_INNER = LONG_NOTE_PIECES.map(innerFragment);
const LONG_UTF8 = LONG_NOTE_PIECES.map((p) => Buffer.byteLength(p, 'utf8'));
/** The high half of an emoji, alone: JSON.stringify escapes it as \ud83d. */
const LONE_INNER = innerFragment('cut emoji: \ud83d');

/** A quoted note of 1–2 KB of UTF-8: a case number, then pieces drawn from LONG_NOTE_PIECES. */
function writeLongNote(w: JsonBytes, long: LongNoteStream): void {
  const r = long.rng;
  const target = 1_024 + r.int(800);
  w.byte(QUOTE);
  w.ascii('Case note #');
  w.padded(r.int(1_000_000), 6);
  w.ascii(': ');
  let size = 19;
  while (size < target) {
    const k = r.int(LONG_INNER.length);
    w.raw(LONG_INNER[k] as Uint8Array);
    size += LONG_UTF8[k] as number;
  }
  if (long.lone > 0 && r.chance(long.lone)) w.raw(LONE_INNER);
  w.byte(QUOTE);
}

/** A public-looking IPv4 address, quoted. */
function writeV4(w: JsonBytes, rng: Random): void {
  w.byte(QUOTE);
  w.int(CUSTOMER_V4_PREFIXES[rng.int(CUSTOMER_V4_PREFIXES.length)] as number);
  for (let k = 0; k < 3; k++) {
    w.byte(0x2e); // '.'
    w.int(k < 2 ? rng.int(256) : 1 + rng.int(254));
  }
  w.byte(QUOTE);
}

/** An IPv6 address in the documentation prefix, compressed form, quoted. */
function writeV6(w: JsonBytes, rng: Random): void {
  w.raw(V6_PREFIX);
  w.padded(rng.int(0x10000), 1, 16);
  w.byte(0x3a);
  w.padded(rng.int(0x10000), 1, 16);
  w.ascii('::');
  w.padded(rng.int(0x10000), 1, 16);
  w.byte(QUOTE);
}
