/**
 * `verify --repair --delete-missing` against a source that answers wrong (issue 38, MEDIUM 1),
 * through the real CLI, the real emulator over HTTP and a real DuckDB store: a source capped at 3
 * records a window, one that answers nothing, and one that dropped half of a day each make it refuse
 * the removals (exit 5), name the days, how many would have gone, why, and the flag that allows it,
 * and remove nothing; --max-delete N allows up to N removals, and a smaller N still refuses them all.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { refusedDeletes } from '../../src/pipeline/verify.js';
import { runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { parquetRowsComparable, readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const TODAY = Math.floor(NOW / D) * D;
const FROM = TODAY - 9 * D;
const END = TODAY - 2 * D;
const HALVED = FROM + 2 * D;
const range = ['--from', isoDay(FROM), '--to', isoDay(END)];

const fx = useEmulator({ seed: 38, from: FROM, to: TODAY, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-verify-guard-' });

describe('verify --repair --delete-missing on a bad answer', () => {
  it('refuses removals on capped, empty and half answers (exit 5, nothing removed); --max-delete allows them', async () => {
    const dataDir = join(await fx.tempDir(), 'data');
    const env = fx.env(dataDir);
    expect((await runCli(['backfill', ...range, '--no-progress'], env)).code).toBe(0);
    const stored = (await readDuckDbSessions(dataDir)).length;
    const ids = async () => (await readDuckDbSessions(dataDir)).map((r) => r.session_id);
    const before = await ids();

    // Capped at 3 records a window: every day looks gone but for 3; the repeated count gives it away.
    fx.emu.setFaults({ truncateResultsTo: 3 });
    const capped = await runCli(['verify', ...range, '--repair', '--delete-missing', '--no-progress'], env);
    expect(capped.code, capped.stderr).toBe(5);
    expect(capped.stdout).toMatch(/^verify \S+: failed: removals refused/);
    const wouldGo = Number(/refused +(\d+) removal\(s\) on 7 day\(s\), nothing removed from them: /.exec(capped.stdout)?.[1]);
    expect(wouldGo).toBeGreaterThan(stored / 2);
    expect(capped.stderr).toMatch(new RegExp(`${isoDay(FROM)}: \\d+ no longer returned by the source, removal refused \\(its answer held exactly 3 records, as 7 of the 7 answers did: the source may cut its answers at 3 \\(set --max-results-per-query 3`));
    expect(capped.stderr).toContain(`nothing was removed from those 7 days (${wouldGo} session(s) would have gone); if the source is right to have dropped them, allow it with`);
    expect(capped.stderr).toMatch(new RegExp(`--repair --delete-missing --max-delete ${wouldGo}\``));
    // The long error is printed once (on stderr, after the summary), as an export's is (issue 42 #6).
    const all = capped.stdout + capped.stderr;
    expect(all.split('if the source is right to have dropped them').length - 1).toBe(1);
    expect(all.split('differs from the source').length - 1).toBe(1);
    expect(await ids()).toEqual(before);

    // An empty answer: the day's source count is 0.
    fx.emu.setFaults({ truncateResultsTo: 0 });
    const empty = await runCli(['verify', ...range, '--repair', '--delete-missing', '--no-progress', '--json'], env);
    expect(empty.code, empty.stderr).toBe(5);
    const refused = JSON.parse(empty.stdout).verify.refused as Array<{ date: string; wouldDelete: number; reasons: string[] }>;
    expect(refused.map((r) => r.date)).toEqual(Array.from({ length: 7 }, (_, i) => isoDay(FROM + i * D)));
    expect(refused.every((r) => r.reasons.some((x) => x.startsWith('the source returned no session of the day while the store holds')))).toBe(true);
    expect(await ids()).toEqual(before);

    // Half of one day dropped: more than 5 % of it would go.
    fx.emu.setFaults({ holdBack: [{ day: isoDay(HALVED), fraction: 0.5 }] });
    const halvedStored = (await readDuckDbSessions(dataDir)).filter((r) => isoDay(Number(r.started_at)) === isoDay(HALVED)).length;
    const dropped = halvedStored - fx.emu.dataset.sessionsStartedIn(HALVED, HALVED + D).length;
    expect(dropped).toBeGreaterThan(halvedStored * 0.05);
    const half = await runCli(['verify', ...range, '--repair', '--delete-missing', '--no-progress'], env);
    expect(half.code, half.stderr).toBe(5);
    expect(half.stderr).toContain(
      `${isoDay(HALVED)}: ${dropped} no longer returned by the source, removal refused (${dropped} of its ${halvedStored} stored sessions would go, more than 5 % of the day (${Math.floor(halvedStored * 0.05)}))`,
    );
    expect(await ids()).toEqual(before);

    // --max-delete below what would go: still nothing removed.
    const tooFew = await runCli(['verify', ...range, '--repair', '--delete-missing', '--max-delete', String(dropped - 1), '--no-progress'], env);
    expect(tooFew.code).toBe(5);
    expect(tooFew.stderr).toContain(`${dropped} would go in all, more than --max-delete ${dropped - 1} allows`);
    expect(await ids()).toEqual(before);

    // --max-delete as the refusal said: removed, the store equals the source (table and dataset).
    const allowed = await runCli(['verify', ...range, '--repair', '--delete-missing', '--max-delete', String(dropped), '--no-progress'], env);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain(`0 session(s) committed, ${dropped} removed`);
    expect((await readDuckDbSessions(dataDir)).length).toBe(stored - dropped);
    expect(parquetRowsComparable(await readParquetDataset(dataDir))).toHaveLength(stored - dropped);
  });

  it('--max-delete without --delete-missing, or not a whole number, is a usage error', async () => {
    const env = fx.env(join(await fx.tempDir(), 'data'));
    const alone = await runCli(['verify', ...range, '--repair', '--max-delete', '5'], env);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--max-delete goes with --repair --delete-missing');
    const bad = await runCli(['verify', ...range, '--repair', '--delete-missing', '--max-delete', 'lots'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--max-delete must be a whole number of sessions (0 or more), got "lots"');
  });
});

describe('refusedDeletes', () => {
  const dayOf = (date: string, source: number, stored: number, gone: number) => ({ date, source, stored, gone, missing: 0, changed: 0, changedFields: {} });
  const t = (date: string) => Date.parse(`${date}T00:00:00Z`) / 1000;
  const answer = (date: string, count: number) => ({ start: t(date), end: t(date) + D, count });
  it.each([
    ['within 5 % of the day', [dayOf('2026-01-01', 95, 100, 5)], [answer('2026-01-01', 95)], {}, []],
    ['one over 5 %', [dayOf('2026-01-01', 94, 100, 6)], [answer('2026-01-01', 94)], {}, ['2026-01-01']],
    ['an empty day', [dayOf('2026-01-01', 0, 10, 10)], [answer('2026-01-01', 0)], { maxDelete: 9 }, ['2026-01-01']],
    ['a repeated largest count', [dayOf('2026-01-01', 50, 51, 1), dayOf('2026-01-02', 50, 50, 0)], [answer('2026-01-01', 50), answer('2026-01-02', 50)], {}, ['2026-01-01']],
    ['distinct counts', [dayOf('2026-01-01', 50, 51, 1), dayOf('2026-01-02', 49, 49, 0)], [answer('2026-01-01', 50), answer('2026-01-02', 49)], {}, []],
    ['--max-delete allows them all', [dayOf('2026-01-01', 0, 10, 10), dayOf('2026-01-02', 3, 40, 37)], [answer('2026-01-01', 0), answer('2026-01-02', 3)], { maxDelete: 47 }, []],
    ['--max-delete one short refuses them all', [dayOf('2026-01-01', 0, 10, 10), dayOf('2026-01-02', 39, 40, 1)], [answer('2026-01-01', 0), answer('2026-01-02', 39)], { maxDelete: 10 }, ['2026-01-01', '2026-01-02']],
  ])('%s', (_name, days, answers, o, want) => {
    expect(refusedDeletes(days, answers, o).map((r) => r.date)).toEqual(want);
  });
});
