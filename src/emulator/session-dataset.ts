/**
 * The emulator's data: generated lazily day by day, cached, and shown as at the emulator's "now"
 * (sessions not started yet hidden, running ones with ended and duration null). A window is chosen
 * as a Selection (runs of record positions), then rendered straight from the days' pre-written JSON
 * text (the pipeline's all-fields query) or turned into objects (anything else).
 */
import type { SessionRecord } from '../schema/session-fields.js';
import { DAY_SECONDS, MAX_DURATION_SECONDS, generateDay, type GeneratedDay, type LongNotes } from './generate-day.js';
import { SessionIdCodec } from './session-ids.js';
import { amendedView, heldMask, type LateDataView } from './late-data.js';
import { Lru } from './lru.js';

export type WindowRule = 'closed' | 'half-open' | 'overlap';

export interface SessionDatasetOptions {
  seed: number;
  /** Keys the session ids; default `seed`. */
  idSeed?: number;
  sessionsPerDay: number;
  longNotes?: LongNotes;
  /** The data's instants, [from, to) in epoch seconds; `to` undefined: data runs up to "now". */
  from: number;
  to: number | undefined;
  now: () => number;
  /** How many generated days to keep (when no shared `dayCache` is given); default 64. */
  cacheDays?: number;
  /** The account's name: keys the session ids (see session-ids.ts) and this dataset's entries in `dayCache`. */
  scope?: string;
  dayCache?: SharedDayCache;
  /** Sessions held back or amended now (late-data.ts); read once per selection. */
  lateData?: () => LateDataView | undefined;
}

/**
 * Generated days of several datasets in one LRU bounded by an estimate of their memory, so 200
 * accounts cost no more than one busy account. Parsed objects take about three times the text:
 * they are counted from the start.
 */
export class SharedDayCache extends Lru<string, DayEntry> {
  constructor(maxBytes: number) {
    super(maxBytes, (entry) => entry.gen.text.length * 4 + entry.gen.count * 16);
  }
}

export interface DayEntry {
  gen: GeneratedDay;
  /** The day's records as objects, parsed from the text on first need. */
  records?: SessionRecord[];
}

/** Consecutive positions [from, to) of one day; a running or amended record is always a part of its own. */
interface Part {
  day: DayEntry;
  from: number;
  to: number;
  running: boolean;
  /** Its notes changed after the fact (late-data.ts). */
  amended?: boolean;
}

/** The records a window returns, in order, as positions in the cached days, at the "now" it was made at. */
export class Selection {
  constructor(readonly parts: readonly Part[], readonly count: number, readonly now: number) {}

  take(n: number): Selection {
    if (n >= this.count) return this;
    const parts: Part[] = [];
    let left = n;
    for (const p of this.parts) {
      if (left <= 0) break;
      const size = p.to - p.from;
      parts.push(size <= left ? p : { ...p, to: p.from + left });
      left -= size;
    }
    return new Selection(parts, n, this.now);
  }
}

export class SessionDataset {
  private readonly ids: SessionIdCodec;
  private readonly days: Lru<string, DayEntry>;
  /** Held-back masks by day and share (late-data.ts). */
  private readonly masks = new Lru<string, Uint8Array>(64);

  constructor(private readonly options: SessionDatasetOptions) {
    this.ids = new SessionIdCodec(options.idSeed ?? options.seed, options.scope);
    this.days = options.dayCache ?? new Lru(options.cacheDays ?? 64);
  }

  now(): number {
    return this.options.now();
  }

  /** What a `sessions(start, end)` query returns under `rule`, sorted by started then id. */
  select(start: number, end: number, rule: WindowRule): Selection {
    const now = this.now();
    const [lo, hi] = this.startedBounds(rule === 'overlap' ? start - MAX_DURATION_SECONDS : start, rule === 'half-open' ? end - 1 : end, now);
    return this.collect(lo, hi, now, rule === 'overlap' ? start : undefined);
  }

  /** Whether `select(start, end, rule)` can no longer change as "now" moves forward. */
  isSettled(end: number, rule: WindowRule): boolean {
    const hi = rule === 'half-open' ? end - 1 : end;
    const lastDayEnd = (Math.floor(hi / DAY_SECONDS) + 1) * DAY_SECONDS;
    return lastDayEnd + MAX_DURATION_SECONDS <= this.now();
  }

  /** The selection's records as objects, shown at the selection's now. Shared with the cache: do not change them. */
  records(selection: Selection): SessionRecord[] {
    const out: SessionRecord[] = [];
    for (const p of selection.parts) {
      const all = this.objects(p.day);
      for (let i = p.from; i < p.to; i++) out.push(shown(all[i] as SessionRecord, p.running, p.amended));
    }
    return out;
  }

  /**
   * The JSON of the selection's full records (every field, SDL order), comma separated, as Buffers.
   * An ended run is one slice of its day's pre-written text, so serving costs next to nothing.
   */
  render(selection: Selection): Buffer[] {
    const out: Buffer[] = [];
    for (const p of selection.parts) {
      if (out.length > 0) out.push(COMMA);
      if (p.running || p.amended) {
        out.push(Buffer.from(JSON.stringify(shown(this.objects(p.day)[p.from] as SessionRecord, p.running, p.amended)), 'utf8'));
      } else {
        const { text, offsets } = p.day.gen;
        out.push(text.subarray(offsets[p.from] as number, (offsets[p.to] as number) - 1));
      }
    }
    return out;
  }

  /** Every session whose started lies in [start, end), as the server would return it now; copies. */
  sessionsStartedIn(start: number, end: number): SessionRecord[] {
    const now = this.now();
    const [lo, hi] = this.startedBounds(start, end - 1, now);
    return this.records(this.collect(lo, hi, now, undefined)).map(cloneRecord);
  }

  /** The session with this id as the server would return it now (shared with the cache), or undefined. */
  lookup(id: string): SessionRecord | undefined {
    const key = this.ids.decode(id);
    if (!key) return undefined;
    const now = this.now();
    const [lo, hi] = this.startedBounds(-Infinity, Infinity, now);
    const dayStart = key.day * DAY_SECONDS;
    if (dayStart + DAY_SECONDS <= lo || dayStart > hi) return undefined;
    const all = this.objects(this.day(key.day));
    const at = all.findIndex((r) => r.id === id);
    const found = all[at];
    if (!found || (found.started as number) < lo || (found.started as number) > hi) return undefined;
    const late = this.options.lateData?.();
    const held = late?.held.get(key.day);
    if (held !== undefined && this.mask(this.day(key.day), key.day, held)[at]) return undefined;
    return shown(found, (found.ended as number) > now, at < (late?.amended.get(key.day) ?? 0));
  }

  byId(id: string): SessionRecord | undefined {
    const r = this.lookup(id);
    return r && cloneRecord(r);
  }

  /** Inclusive bounds on `started`, clipped to the data range and to now. */
  private startedBounds(lo: number, hi: number, now: number): [number, number] {
    const to = this.options.to === undefined ? Infinity : this.options.to - 1;
    return [Math.max(lo, this.options.from), Math.min(hi, now, to)];
  }

  /** Sessions with started in [lo, hi]; with `overlapStart`, only those still running or ended at or after it. */
  private collect(lo: number, hi: number, now: number, overlapStart: number | undefined): Selection {
    const parts: Part[] = [];
    let count = 0;
    if (hi < lo) return new Selection(parts, 0, now);
    const late = this.options.lateData?.();
    for (let d = Math.floor(lo / DAY_SECONDS); d <= Math.floor(hi / DAY_SECONDS); d++) {
      const entry = this.day(d);
      const { started, ended } = entry.gen;
      const heldShare = late?.held.get(d);
      const held = heldShare === undefined ? undefined : this.mask(entry, d, heldShare);
      const amendedUpTo = late?.amended.get(d) ?? 0;
      let last: Part | undefined;
      for (let i = lowerBound(started, lo); i < started.length && (started[i] as number) <= hi; i++) {
        if (held?.[i]) continue;
        const running = (ended[i] as number) > now;
        if (overlapStart !== undefined && (running ? now : (ended[i] as number)) < overlapStart) continue;
        count++;
        const amended = i < amendedUpTo;
        if (!running && !amended && last && !last.running && !last.amended && last.to === i) last.to++;
        else parts.push((last = { day: entry, from: i, to: i + 1, running, ...(amended ? { amended } : {}) }));
      }
    }
    return new Selection(parts, count, now);
  }

  /** Which of a day's sessions are held back at this share (late-data.ts), made once. */
  private mask(entry: DayEntry, d: number, share: number): Uint8Array {
    const key = `${d}:${share}`;
    let m = this.masks.get(key);
    if (!m) {
      m = heldMask(this.options.seed, d, entry.gen.count, share);
      this.masks.set(key, m);
    }
    return m;
  }

  private objects(entry: DayEntry): SessionRecord[] {
    entry.records ??= JSON.parse(`[${entry.gen.text.toString('utf8')}]`) as SessionRecord[];
    return entry.records;
  }

  private day(d: number): DayEntry {
    const { seed, sessionsPerDay, longNotes, scope, dayCache } = this.options;
    const key = `${scope ?? ''}\u0000${d}`;
    let entry = this.days.get(key);
    if (!entry) {
      // Only a dataset with its own cache has long notes: a shared one (several accounts) never had them.
      entry = { gen: generateDay({ seed, sessionsPerDay, ids: this.ids, ...(longNotes && !dayCache ? { longNotes } : {}) }, d) };
      this.days.set(key, entry);
    }
    return entry;
  }
}

const COMMA = Buffer.from(',');

/** The record as shown: amended after the fact, and with ended and duration null while running. */
function shown(r: SessionRecord, running: boolean, amended: boolean | undefined): SessionRecord {
  const s = amended ? amendedView(r) : r;
  return running ? { ...s, ended: null, duration: null } : s;
}

function lowerBound(values: Int32Array, t: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((values[mid] as number) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function cloneRecord(r: SessionRecord): SessionRecord {
  return {
    ...r,
    agent: r.agent ? { ...r.agent } : r.agent,
    externalFields: r.externalFields ? { ...r.externalFields } : r.externalFields,
  };
}
