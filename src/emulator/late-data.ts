/**
 * Data that arrives late (`holdBack`) or changes after the fact (`amend`), as an endpoint's after an
 * outage: settings of the faults, in effect from a time on the emulator's clock or a number of the
 * account's reporting requests (counted from when the faults were set); docs/emulator.md, "Late and amended data".
 */
import type { SessionRecord } from '../schema/session-fields.js';
import { DAY_SECONDS, EXTERNAL_FIELD_NAMES } from './generate-day.js';
import { Random } from './prng.js';

/** A share (`fraction`) of a UTC day's (YYYY-MM-DD) sessions missing from every answer until released. */
export interface HoldBack {
  day: string;
  fraction: number;
  untilNow?: number;
  untilRequests?: number;
}

/** The first `count` sessions of a UTC day (YYYY-MM-DD) with their notes amended, at once unless told. */
export interface Amendment {
  day: string;
  count: number;
  fromNow?: number;
  fromRequests?: number;
}

/** What is in effect for one answer: by day index (days since the epoch), the share held back and the sessions amended. */
export interface LateDataView {
  held: ReadonlyMap<number, number>;
  amended: ReadonlyMap<number, number>;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** The text an amended session's notes get. */
export const AMENDED_NOTE = '[amended after the fact]';

/** Throws a RangeError naming the first bad setting. */
export function validateLateData(holdBack: readonly HoldBack[] | undefined, amend: readonly Amendment[] | undefined): void {
  const day = (v: unknown, at: string) => {
    if (typeof v !== 'string' || !DATE.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`))) throw new RangeError(`${at}.day must be a date as YYYY-MM-DD; got ${JSON.stringify(v)}`);
  };
  const count = (v: unknown, at: string, min: number, required = false) => {
    if ((v !== undefined || required) && !(Number.isInteger(v) && (v as number) >= min)) throw new RangeError(`${at} must be a whole number of at least ${min}; got ${JSON.stringify(v)}`);
  };
  const instant = (v: unknown, at: string) => {
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0)) throw new RangeError(`${at} must be epoch seconds; got ${JSON.stringify(v)}`);
  };
  if (holdBack !== undefined && !Array.isArray(holdBack)) throw new RangeError('faults.holdBack must be a list of { day, fraction, untilNow?, untilRequests? }');
  if (amend !== undefined && !Array.isArray(amend)) throw new RangeError('faults.amend must be a list of { day, count, fromNow?, fromRequests? }');
  (holdBack ?? []).forEach((h, i) => {
    const at = `faults.holdBack[${i}]`;
    day(h?.day, at);
    if (!(typeof h.fraction === 'number' && h.fraction > 0 && h.fraction <= 1)) throw new RangeError(`${at}.fraction must be a share above 0 and up to 1; got ${JSON.stringify(h.fraction)}`);
    instant(h.untilNow, `${at}.untilNow`);
    count(h.untilRequests, `${at}.untilRequests`, 0);
  });
  (amend ?? []).forEach((a, i) => {
    const at = `faults.amend[${i}]`;
    day(a?.day, at);
    count(a.count, `${at}.count`, 1, true);
    instant(a.fromNow, `${at}.fromNow`);
    count(a.fromRequests, `${at}.fromRequests`, 0);
  });
}

/**
 * What is in effect now: `now` the emulator's clock (epoch seconds), `requests` the reporting
 * requests of the account since the faults were set, the one being answered included. Undefined
 * when nothing is.
 */
export function lateDataView(holdBack: readonly HoldBack[] | undefined, amend: readonly Amendment[] | undefined, now: number, requests: number): LateDataView | undefined {
  const held = new Map<number, number>();
  const amended = new Map<number, number>();
  for (const h of holdBack ?? []) {
    const released = (h.untilNow !== undefined && now >= h.untilNow) || (h.untilRequests !== undefined && requests > h.untilRequests);
    if (!released) held.set(dayIndex(h.day), Math.max(h.fraction, held.get(dayIndex(h.day)) ?? 0));
  }
  for (const a of amend ?? []) {
    const due = (a.fromNow === undefined || now >= a.fromNow) && (a.fromRequests === undefined || requests > a.fromRequests);
    if (due) amended.set(dayIndex(a.day), Math.max(a.count, amended.get(dayIndex(a.day)) ?? 0));
  }
  return held.size || amended.size ? { held, amended } : undefined;
}

function dayIndex(date: string): number {
  return Math.floor(Date.parse(`${date}T00:00:00Z`) / 1000 / DAY_SECONDS);
}

/**
 * Which of a day's `count` sessions (in served order) are held back at `fraction`: drawn from the
 * seed and the day, so the same ones on every run; a larger share holds back a superset.
 */
export function heldMask(seed: number, day: number, count: number, fraction: number): Uint8Array {
  const rng = new Random(seed, day, 0x401d);
  const mask = new Uint8Array(count);
  for (let i = 0; i < count; i++) mask[i] = rng.next() < fraction ? 1 : 0;
  return mask;
}

/** The session as it reads once amended: its notes changed (an externalFields object made when it had none). */
export function amendedView(r: SessionRecord): SessionRecord {
  const ext = (r.externalFields ?? Object.fromEntries(EXTERNAL_FIELD_NAMES.map((k) => [k, null]))) as Record<string, unknown>;
  const notes = typeof ext.notes === 'string' && ext.notes ? `${ext.notes} ${AMENDED_NOTE}` : AMENDED_NOTE;
  return { ...r, externalFields: { ...ext, notes } as SessionRecord['externalFields'] };
}
