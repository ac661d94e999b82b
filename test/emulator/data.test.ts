import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { generateDay } from '../../src/emulator/generate-day.js';
import { SessionIdCodec } from '../../src/emulator/session-ids.js';
import { SessionDataset } from '../../src/emulator/session-dataset.js';
import type { SessionRecord } from '../../src/schema/session-fields.js';
import { D, FROM, NOW, TODAY } from './helpers.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function store(seed: number, options: Partial<ConstructorParameters<typeof SessionDataset>[0]> = {}): SessionDataset {
  return new SessionDataset({ seed, sessionsPerDay: 200, from: FROM, to: undefined, now: () => NOW, ...options });
}

describe('determinism', () => {
  it('the same seed gives the same data, another seed other data', () => {
    const a = store(5).sessionsStartedIn(FROM, NOW);
    const b = store(5).sessionsStartedIn(FROM, NOW);
    const c = store(6).sessionsStartedIn(FROM, NOW);
    expect(a.length).toBeGreaterThan(1_000);
    expect(b).toEqual(a);
    expect(c.map((r) => r.id)).not.toEqual(a.map((r) => r.id));
  });

  it('a day is the same whichever order days are made in and however small the cache', () => {
    const forward = store(9, { cacheDays: 1 });
    const backward = store(9, { cacheDays: 1 });
    const days = [0, 1, 2, 3].map((k) => FROM + k * D);
    const f = days.map((t) => forward.sessionsStartedIn(t, t + D));
    const b = [...days].reverse().map((t) => backward.sessionsStartedIn(t, t + D)).reverse();
    expect(b).toEqual(f);
  });

  it("a day's pre-written JSON is exactly what JSON.stringify writes for its records", () => {
    const ids = new SessionIdCodec(3);
    for (let day = FROM / D; day < FROM / D + 5; day++) {
      const g = generateDay({ seed: 3, sessionsPerDay: 300, ids }, day);
      const text = `[${g.text.toString('utf8')}]`;
      const records = JSON.parse(text) as SessionRecord[];
      expect(JSON.stringify(records)).toBe(text);
      expect(records.map((r) => r.started)).toEqual([...g.started]);
      records.forEach((r, i) => {
        expect(g.text.toString('utf8', g.offsets[i], g.offsets[i + 1]! - 1)).toBe(JSON.stringify(r));
      });
    }
  });

  it('ids decode back to their day, and foreign ids are refused', () => {
    const codec = new SessionIdCodec(12);
    for (const [day, index] of [[0, 0], [20_468, 17], [4_294_967_295, 4_294_967_295]] as const) {
      const id = codec.encode(day, index);
      expect(id).toMatch(UUID_V4);
      expect(codec.decode(id)).toEqual({ day, index });
      expect(new SessionIdCodec(13).decode(id)).toBeUndefined();
    }
    expect(codec.decode('00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });
});

describe('realism (14 days at 200 sessions per day)', () => {
  let all: SessionRecord[];
  beforeAll(() => {
    all = store(1).sessionsStartedIn(FROM, TODAY);
  });
  const share = (pred: (r: SessionRecord) => boolean): number => all.filter(pred).length / all.length;

  it('has about the volume asked for, fewer sessions on weekends and most in business hours', () => {
    expect(all.length).toBeGreaterThan(14 * 200 * 0.85);
    expect(all.length).toBeLessThan(14 * 200 * 1.15);
    const perDay = new Map<number, number>();
    for (const r of all) perDay.set(Math.floor(r.started! / D), (perDay.get(Math.floor(r.started! / D)) ?? 0) + 1);
    const weekend = [...perDay].filter(([d]) => [0, 6].includes(new Date(d * D * 1000).getUTCDay())).map(([, n]) => n);
    const weekday = [...perDay].filter(([d]) => ![0, 6].includes(new Date(d * D * 1000).getUTCDay())).map(([, n]) => n);
    expect(Math.max(...weekend)).toBeLessThan(Math.min(...weekday) / 2);
    expect(share((r) => new Date(r.started! * 1000).getUTCHours() >= 8 && new Date(r.started! * 1000).getUTCHours() < 17)).toBeGreaterThan(0.6);
  });

  it('has unique UUIDs, sorted by started then id, complete records with duration = ended - started', () => {
    expect(new Set(all.map((r) => r.id)).size).toBe(all.length);
    for (let i = 0; i < all.length; i++) {
      const r = all[i]!;
      expect(r.id).toMatch(UUID_V4);
      expect(Object.keys(r)).toHaveLength(14);
      expect(r.duration).toBe(r.ended! - r.started!);
      if (i > 0) {
        const p = all[i - 1]!;
        expect(p.started! < r.started! || (p.started === r.started && p.id < r.id)).toBe(true);
      }
    }
    const durations = all.map((r) => r.duration!);
    expect(Math.min(...durations)).toBeLessThan(60);
    expect(Math.max(...durations)).toBeGreaterThan(3 * 3_600);
  });

  it('records about 30 % of sessions, with a recording URL exactly when recorded', () => {
    expect(share((r) => r.recording === true)).toBeGreaterThan(0.25);
    expect(share((r) => r.recording === true)).toBeLessThan(0.35);
    for (const r of all) expect(r.recordingUrl !== null).toBe(r.recording === true);
  });

  it('keeps PINs as 6-digit strings with leading zeros, and has some null and empty ones', () => {
    const pins = all.map((r) => r.pin);
    expect(pins.filter((p) => typeof p === 'string' && p !== '').every((p) => /^\d{6}$/.test(p!))).toBe(true);
    expect(pins.some((p) => p?.startsWith('0'))).toBe(true);
    expect(pins).toContain(null);
    expect(pins).toContain('');
  });

  it('has sessions without an agent, without external fields, and empty strings', () => {
    expect(all.some((r) => r.agent === null)).toBe(true);
    expect(all.some((r) => r.externalFields === null)).toBe(true);
    for (const r of all) expect(r.agentGroupId === null).toBe(r.agent === null);
    expect(all.some((r) => r.externalFields?.externalCaseId === '')).toBe(true);
    expect(all.some((r) => r.externalFields?.accountingInfo === '')).toBe(true);
  });

  it('has accents, CJK, emoji, quotes, commas and newlines in names and notes', () => {
    const texts = all.flatMap((r) => [r.agent?.name, r.externalFields?.customerName, r.externalFields?.notes]).filter((t): t is string => !!t);
    for (const re of [/[À-ž]/, /[\u4e00-\u9fff]/, /\p{Extended_Pictographic}/u, /"/, /,/, /\n/]) {
      expect(texts.some((t) => re.test(t)), String(re)).toBe(true);
    }
    expect(all.some((r) => r.agent?.name?.includes('\n'))).toBe(true);
  });

  it('uses a few agents, groups, companies and session types, and IPv4 and IPv6 addresses', () => {
    const distinct = (f: (r: SessionRecord) => unknown) => new Set(all.map(f).filter((v) => v !== null)).size;
    expect(distinct((r) => r.agent?.id ?? null)).toBeGreaterThan(20);
    expect(distinct((r) => r.agentGroupId)).toBeGreaterThanOrEqual(4);
    expect(distinct((r) => r.companyId)).toBeLessThanOrEqual(5);
    expect(distinct((r) => r.sessionType)).toBeLessThanOrEqual(6);
    expect(all.some((r) => r.customerIp?.includes(':'))).toBe(true);
    expect(all.some((r) => /^\d+\.\d+\.\d+\.\d+$/.test(r.customerIp ?? ''))).toBe(true);
  });

  it('has scheduled sessions starting exactly at midnight', () => {
    expect(all.some((r) => r.started! % D === 0)).toBe(true);
  });
});

describe('"now"', () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await startEmulator({ seed: 1, from: FROM, now: NOW });
  });
  afterAll(async () => emu.close());

  it('shows sessions still running at now with ended and duration null, and none starting after now', () => {
    const today = emu.dataset.sessionsStartedIn(TODAY, TODAY + D);
    expect(Math.max(...today.map((r) => r.started!))).toBeLessThanOrEqual(NOW);
    const running = today.filter((r) => r.ended === null);
    expect(running.length).toBeGreaterThan(0);
    for (const r of running) expect(r.duration).toBeNull();
    for (const r of today.filter((x) => x.ended !== null)) expect(r.ended!).toBeLessThanOrEqual(NOW);
    expect(emu.dataset.sessionsStartedIn(NOW + 1, NOW + D)).toEqual([]);
  });

  it('setNow ends running sessions under the same id and lets new ones appear', () => {
    const before = emu.dataset.sessionsStartedIn(TODAY, TODAY + D);
    const running = before.filter((r) => r.ended === null);
    emu.setNow(NOW + 12 * 3_600);
    try {
      const after = emu.dataset.sessionsStartedIn(TODAY, TODAY + D);
      expect(after.length).toBeGreaterThan(before.length);
      for (const r of running) {
        const later = emu.dataset.byId(r.id)!;
        expect(later.started).toBe(r.started);
        expect(later.ended).not.toBeNull();
        expect(later.duration).toBe(later.ended! - later.started!);
      }
      const newcomer = after.find((r) => r.started! > NOW)!;
      expect(emu.dataset.byId(newcomer.id)).toEqual(newcomer);
    } finally {
      emu.setNow(NOW);
    }
    const newcomer = emu.dataset.sessionsStartedIn(NOW + 1, NOW + D);
    expect(newcomer).toEqual([]);
  });

  it('byId finds every session it should and nothing it should not', () => {
    const some = emu.dataset.sessionsStartedIn(TODAY - 3 * D, TODAY - 2 * D).slice(0, 20);
    for (const r of some) expect(emu.dataset.byId(r.id)).toEqual(r);
    expect(emu.dataset.byId('not-a-uuid')).toBeUndefined();
    expect(emu.dataset.byId('8702e019-d9f3-4bff-a442-cc9f37011445')).toBeUndefined();
  });

  it('defaults: from 90 days back at midnight, data up to a live now', async () => {
    const live = await startEmulator({ seed: 2, sessionsPerDay: 50 });
    try {
      const wall = Math.floor(Date.now() / 1000);
      const recent = live.dataset.sessionsStartedIn(wall - 2 * D, wall + D);
      expect(recent.length).toBeGreaterThan(0);
      expect(Math.max(...recent.map((r) => r.started!))).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
      const from = Math.floor((wall - 90 * D) / D) * D;
      expect(live.dataset.sessionsStartedIn(from - 5 * D, from)).toEqual([]);
      expect(live.dataset.sessionsStartedIn(from, from + 5 * D).length).toBeGreaterThan(0);
    } finally {
      await live.close();
    }
  });

  it('`to` ends the data even when now is later', async () => {
    const clipped = await startEmulator({ seed: 1, from: FROM, to: TODAY, now: NOW });
    try {
      expect(clipped.dataset.sessionsStartedIn(TODAY, NOW + 1)).toEqual([]);
      expect(clipped.dataset.sessionsStartedIn(FROM, TODAY)).toEqual(emu.dataset.sessionsStartedIn(FROM, TODAY));
    } finally {
      await clipped.close();
    }
  });
});
