/** The emulator's late and amended data (docs/emulator.md), over real HTTP: held back until released, amended from a point on. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { emulatorOptionsFromFlags, type EmulatorFlags } from '../../src/cli/commands/emulator.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { startEmulator, type Emulator, type EmulatorFaults } from '../../src/emulator/index.js';
import { AMENDED_NOTE } from '../../src/emulator/late-data.js';
import { isoDay } from '../helpers/time.js';
import { D, FROM, NOW, post, sessionsQuery } from './helpers.js';

/** The Monday before NOW's Thursday: a whole past day of the emulator's data. */
const DAY = NOW - 14 * 3_600 - 3 * D;
const DATE = isoDay(DAY);
const FIELDS = 'id started externalFields { notes }';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ seed: 21, from: FROM, now: NOW });
});
afterAll(async () => emu.close());
afterEach(() => emu.setFaults({}));

async function day(query = sessionsQuery(DAY, DAY + D, FIELDS)): Promise<Array<{ id: string; started: number; externalFields: { notes: string | null } | null }>> {
  const r = await post(emu, { query });
  expect(r.status).toBe(200);
  expect(r.json.errors).toBeUndefined();
  return r.json.data.sessions;
}

describe('holdBack', () => {
  it('answers 200 without most of the day until released by setFaults, then with all of it', async () => {
    const all = await day();
    expect(all.length).toBeGreaterThan(100);
    emu.setFaults({ holdBack: [{ day: DATE, fraction: 0.8 }] });
    const short = await day();
    // About 80 % held back, drawn from the seed: the same ones on every answer.
    expect(short.length).toBeGreaterThan(all.length * 0.1);
    expect(short.length).toBeLessThan(all.length * 0.35);
    expect(await day()).toEqual(short);
    expect(short.every((s) => all.some((a) => a.id === s.id))).toBe(true);
    // Every way of reading it agrees: the dataset (ground truth) and session(id:).
    // (A closed window also returns the next day's sessions that start at midnight.)
    expect(emu.dataset.sessionsStartedIn(DAY, DAY + D).map((s) => s.id)).toEqual(short.filter((s) => s.started < DAY + D).map((s) => s.id));
    const gone = all.find((a) => !short.some((s) => s.id === a.id))!;
    expect((await post(emu, { query: `{ session(id: "${gone.id}") { id } }` })).json.data.session).toBeNull();
    // The days around it are untouched.
    expect((await day(sessionsQuery(DAY - D, DAY, 'id'))).length).toBe(emu.dataset.sessionsStartedIn(DAY - D, DAY).length);
    emu.setFaults({});
    expect(await day()).toEqual(all);
  });

  it('releases after a number of requests, or once the clock reaches a time', async () => {
    const all = await day();
    emu.setFaults({ holdBack: [{ day: DATE, fraction: 0.5, untilRequests: 2 }] });
    expect((await day()).length).toBeLessThan(all.length);
    expect((await day()).length).toBeLessThan(all.length);
    expect(await day()).toEqual(all);

    emu.setFaults({ holdBack: [{ day: DATE, fraction: 0.5, untilNow: NOW + 3_600 }] });
    expect((await day()).length).toBeLessThan(all.length);
    emu.setNow(NOW + 3_600);
    try {
      expect((await day()).length).toBe(all.length);
    } finally {
      emu.setNow(NOW);
    }
  });

  it('a body cache never serves a held-back answer after the release', async () => {
    const cached = await startEmulator({ seed: 21, from: FROM, now: NOW, cacheBodies: true });
    try {
      const q = { query: sessionsQuery(DAY, DAY + D, 'id') };
      const all = (await post(cached, q)).json.data.sessions.length;
      cached.setFaults({ holdBack: [{ day: DATE, fraction: 0.9, untilRequests: 1 }] });
      expect((await post(cached, q)).json.data.sessions.length).toBeLessThan(all / 2);
      expect((await post(cached, q)).json.data.sessions.length).toBe(all);
    } finally {
      await cached.close();
    }
  });
});

describe('amend', () => {
  it("changes the notes of the day's first sessions from a point on, the rest as they were", async () => {
    const before = await day();
    emu.setFaults({ amend: [{ day: DATE, count: 3, fromRequests: 1 }] });
    expect(await day()).toEqual(before);
    const after = await day();
    expect(after.map((s) => s.id)).toEqual(before.map((s) => s.id));
    const changed = after.filter((s, i) => JSON.stringify(s) !== JSON.stringify(before[i]));
    expect(changed.map((s) => s.id)).toEqual(before.slice(0, 3).map((s) => s.id));
    for (const s of changed) expect(s.externalFields!.notes).toContain(AMENDED_NOTE);
    // The full-record fast path (what the pipeline asks for) serves the amended record too.
    const full = (await post(emu, { query: sessionsQuery(DAY, DAY + D) })).json.data.sessions;
    expect(full[0].externalFields.notes).toContain(AMENDED_NOTE);
    expect(Object.keys(full[0])).toEqual(Object.keys(full[3]));
  });
});

describe('settings', () => {
  it.each<[string, EmulatorFaults, RegExp]>([
    ['a day that is not a date', { holdBack: [{ day: '2026-13-45', fraction: 0.5 }] }, /holdBack\[0\]\.day must be a date/],
    ['a share above 1', { holdBack: [{ day: DATE, fraction: 1.5 }] }, /fraction must be a share above 0 and up to 1/],
    ['a count of 0', { amend: [{ day: DATE, count: 0 }] }, /amend\[0\]\.count must be a whole number of at least 1/],
  ])('refuses %s', (_name, faults, message) => {
    expect(() => emu.setFaults(faults)).toThrow(message);
  });

  const FLAGS: EmulatorFlags = { host: '127.0.0.1', port: '0', seed: '1', sessionsPerDay: '200', windowRule: 'closed', argTypes: 'Int!' };
  it('the CLI flags build the same settings', () => {
    expect(
      emulatorOptionsFromFlags({ ...FLAGS, holdBack: ['2026-03-04:0.8'], releaseAfterRequests: '40', amend: ['2026-03-05:2'], amendAt: '2026-03-10' }).faults,
    ).toEqual({
      holdBack: [{ day: '2026-03-04', fraction: 0.8, untilRequests: 40 }],
      amend: [{ day: '2026-03-05', count: 2, fromNow: Date.UTC(2026, 2, 10) / 1000 }],
    });
    expect(() => emulatorOptionsFromFlags({ ...FLAGS, holdBack: ['2026-03-04'] })).toThrow(UsageError);
    expect(() => emulatorOptionsFromFlags({ ...FLAGS, holdBack: ['2026-03-04:2'] })).toThrow(/up to 1/);
    expect(() => emulatorOptionsFromFlags({ ...FLAGS, releaseAt: '2026-03-04' })).toThrow(/--release-at goes with --hold-back/);
  });
});
