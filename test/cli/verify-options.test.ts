/**
 * `session-etl verify`'s options through the real CLI and the real emulator: sessions the source
 * drops (gone) are reported and kept by --repair, removed only with --delete-missing (formats both
 * and parquet), sessions amended after the fact are changed with their column named, --sample draws
 * N days, many accounts are verified each on its own (--account), and bad flags exit 2.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AMENDED_NOTE } from '../../src/emulator/late-data.js';
import { writeAccountsConfig } from '../helpers/accounts-config.js';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { expectedRow, parquetRowsComparable, readDuckDbSessions, readParquetDataset } from '../helpers/read-store.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const TODAY = Math.floor(NOW / D) * D;
const FROM = TODAY - 10 * D;
const END = TODAY - 2 * D;
const DROPPED = FROM + 3 * D;
const AMENDED = FROM + 5 * D;
const AMENDED_MANY = FROM + D;
const range = ['--from', isoDay(FROM), '--to', isoDay(END)];

const fx = useEmulator({ seed: 35, from: FROM, to: TODAY, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-verify-opts-' });

const strip = (rows: Array<Record<string, unknown>>) =>
  rows
    .filter((r) => Number(r.started_at) >= FROM && Number(r.started_at) < END)
    .map(({ extracted_at: _, account: _a, ...r }) => r)
    .sort((a, b) => String(a.session_id).localeCompare(String(b.session_id)));
const sourceRows = () => strip(fx.emu.dataset.sessionsStartedIn(FROM, END).map(expectedRow));

describe.each(['both', 'parquet'] as const)('format %s', (format) => {
  it('gone sessions are reported and kept, removed only with --delete-missing; amended ones are changed and repaired', async () => {
    const dataDir = join(await fx.tempDir(), 'data');
    const env = fx.env(dataDir);
    const stored = async () => {
      const dataset = strip(parquetRowsComparable(await readParquetDataset(dataDir)));
      if (format === 'both') expect(strip(await readDuckDbSessions(dataDir))).toEqual(dataset);
      return dataset;
    };
    try {
      expect((await runCli(['backfill', ...range, '--format', format, '--no-progress'], env)).code).toBe(0);
      const full = await stored();
      expect(full).toEqual(sourceRows());

      // The source drops half of one day and amends two sessions of another after the fact.
      fx.emu.setFaults({ holdBack: [{ day: isoDay(DROPPED), fraction: 0.5 }], amend: [{ day: isoDay(AMENDED), count: 2 }] });
      const gone = fx.emu.dataset.sessionsStartedIn(FROM, END).length;
      const dropped = full.length - gone;
      expect(dropped).toBeGreaterThan(0);
      const found = await runCli(['verify', ...range, '--json'], env);
      expect(found.code).toBe(1);
      const days = JSON.parse(found.stdout).verify.days.filter((d: any) => d.missing + d.gone + d.changed);
      expect(days.map((d: any) => [d.date, d.missing, d.gone, d.changed, d.changedFields])).toEqual([
        [isoDay(DROPPED), 0, dropped, 0, {}],
        [isoDay(AMENDED), 0, 0, 2, { external_notes: 2 }],
      ]);

      // --repair commits the amended sessions and keeps the gone ones (exit 1: the store still differs).
      const kept = await runCli(['verify', ...range, '--repair', '--no-progress'], env);
      expect(kept.code).toBe(1);
      expect(kept.stderr).toMatch(new RegExp(`${isoDay(DROPPED)}: ${dropped} no longer returned by the source; sessions the source no longer returns are kept: remove them with \`session-etl verify .* --repair --delete-missing\``));
      const afterKeep = await stored();
      expect(afterKeep).toHaveLength(full.length);
      expect(afterKeep.filter((r) => String(r.external_notes).includes(AMENDED_NOTE))).toHaveLength(2);

      // --delete-missing refuses to remove half of a day (more than 5 %: exit 5); --max-delete allows
      // it, and the store equals the source, table and dataset.
      const refused = await runCli(['verify', ...range, '--repair', '--delete-missing', '--no-progress'], env);
      expect(refused.code).toBe(5);
      expect(await stored()).toHaveLength(full.length);
      const deleted = await runCli(['verify', ...range, '--repair', '--delete-missing', '--max-delete', String(dropped), '--no-progress'], env);
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(deleted.stdout).toContain(`0 session(s) committed, ${dropped} removed`);
      expect(await stored()).toEqual(sourceRows());
      expect((await runCli(['verify', ...range, '--no-progress'], env)).code).toBe(0);

      // The source restores them: missing now, and --repair brings them back.
      fx.emu.setFaults({});
      const back = await runCli(['verify', ...range, '--json'], env);
      expect(back.code).toBe(1);
      expect(JSON.parse(back.stdout).verify.totals).toMatchObject({ missing: dropped, gone: 0, changed: 2 });
      const repaired = await runCli(['verify', ...range, '--repair', '--no-progress'], env);
      expect(repaired.code, repaired.stderr).toBe(0);
      expect(await stored()).toEqual(sourceRows());
    } finally {
      fx.emu.setFaults({});
    }
  });
});

describe('--sample and the options refused', () => {
  let dataDir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    dataDir = join(await fx.tempDir(), 'data');
    env = fx.env(dataDir);
    expect((await runCli(['backfill', ...range, '--no-progress'], env)).code).toBe(0);
  });

  it('--sample 3 verifies three distinct days of the range, one window each, and status says so', async () => {
    const r = await runCli(['verify', ...range, '--sample', '3', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s.kind).toBe('verify');
    expect(new Set(s.verify.sampled).size).toBe(3);
    for (const d of s.verify.sampled) expect(d >= isoDay(FROM) && d < isoDay(END)).toBe(true);
    expect(s.verify.days.map((d: any) => d.date)).toEqual(s.verify.sampled);
    expect(s.windows).toMatchObject({ total: 3, done: 3 });
    const sources = s.verify.days.map((d: any) => d.source);
    expect(sources).toEqual(s.verify.sampled.map((d: string) => fx.emu.dataset.sessionsStartedIn(Date.parse(d) / 1000, Date.parse(d) / 1000 + D).length));
    const st = JSON.parse((await runCli(['status', '--json'], env)).stdout);
    expect(st.lastVerification).toMatchObject({ days: 3, outcome: 'succeeded', missing: 0, gone: 0, changed: 0 });
  });

  it.each([
    [['--delete-missing'], /--delete-missing goes with --repair/],
    [['--sample', '0'], /--sample must be a positive whole number/],
    [['--from', isoDay(END), '--to', isoDay(FROM)], /must be before --to/],
  ])('refuses %j with exit 2', async (flags, message) => {
    const r = await runCli(['verify', ...range, ...flags], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('refuses a data directory with nothing stored (exit 2), creating nothing', async () => {
    const empty = join(await fx.tempDir(), 'nothing');
    const r = await runCli(['verify', ...range], fx.env(empty));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no session-etl data in .*: verify compares the source with what a backfill or export stored/);
    expect(existsSync(empty)).toBe(false);
  });
});

describe('many accounts', () => {
  // The backfill's 43 one-day windows: acme's endpoint answers them without most of its latest
  // weekday; after them, both accounts' endpoints amend two sessions of a day.
  const amend = [{ day: isoDay(AMENDED_MANY), count: 2, fromRequests: 43 }];
  const many = useEmulator(
    {
      seed: 36, from: FROM - 35 * D, to: TODAY, now: NOW, sessionsPerDay: 60,
      accounts: [
        { name: 'acme', apiKey: 'key-acme', faults: { holdBack: [{ day: isoDay(lastWeekday()), fraction: 0.85, untilRequests: 43 }], amend } },
        { name: 'globex', apiKey: 'key-globex', faults: { amend } },
      ],
    },
    { prefix: 'session-etl-verify-many-' },
  );
  let root: string;
  let env: Record<string, string>;
  const cfg = () => ['--config', join(root, 'config.json')];
  beforeAll(async () => {
    const emu = many.emu;
    root = await fx.tempDir();
    await writeAccountsConfig(join(root, 'config.json'), { dataDir: join(root, 'data'), reportingUrl: emu.url }, { acme: 'ACME_KEY', globex: 'GLOBEX_KEY' });
    env = { ACME_KEY: 'key-acme', GLOBEX_KEY: 'key-globex' };
  });

  function lastWeekday(): number {
    for (let t = END - D; ; t -= D) if (![0, 6].includes(new Date(t * 1000).getUTCDay())) return t;
  }

  it("each account's anomalies and differences are its own; --account verifies and repairs one", async () => {
    const held = lastWeekday();
    const backfill = await runCli(['backfill', '--from', isoDay(FROM - 35 * D), '--to', isoDay(END), '--account-concurrency', '1', '--no-progress', ...cfg()], env);
    expect(backfill.code, backfill.stderr).toBe(0);
    const check = await runCli(['status', '--check', '--max-lag', '30d', ...cfg()], env);
    expect(check.code).toBe(1);
    expect(check.stdout.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^UNHEALTHY: account acme: volume anomaly: ${isoDay(held)} holds \\d+ sessions`))]);

    // acme's held-back sessions have arrived, and both endpoints amended two sessions.
    const amended = AMENDED_MANY;
    const both = await runCli(['verify', '--from', isoDay(FROM), '--to', isoDay(END), '--no-progress', ...cfg()], env);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/2 of 2 accounts failed: acme, globex/);
    expect(both.stderr).toMatch(new RegExp(`acme: .*${isoDay(amended)}: 2 changed; ${isoDay(held)}: \\d+ missing`));
    expect(both.stderr).toMatch(new RegExp(`globex: .*${isoDay(amended)}: 2 changed; make the store equal the source with \`session-etl verify --from ${isoDay(FROM)} --to ${isoDay(END)} --data-dir ${join(root, 'data')} --config ${join(root, 'config.json')} --account globex --repair\``));

    const acme = await runCli(['verify', '--from', isoDay(FROM), '--to', isoDay(END), '--account', 'acme', '--repair', '--no-progress', ...cfg()], env);
    expect(acme.code, acme.stderr).toBe(0);
    const after = await runCli(['verify', '--from', isoDay(FROM), '--to', isoDay(END), '--json', ...cfg()], env);
    expect(after.code).toBe(1);
    const outcomes = JSON.parse(after.stdout).accounts.map((a: any) => [a.account, a.outcome, a.summary.verify.totals.changed]);
    expect(outcomes).toEqual([['acme', 'succeeded', 0], ['globex', 'failed', 2]]);
    const st = JSON.parse((await runCli(['status', '--json', ...cfg()], env)).stdout);
    const byAccount = Object.fromEntries(st.accounts.map((a: any) => [a.account, a.status]));
    expect(byAccount.acme.volumeAnomalies).toEqual([]);
    expect(byAccount.globex.lastVerification).toMatchObject({ changed: 2, outcome: 'failed' });
    expect(byAccount.acme.lastVerification).toMatchObject({ changed: 0, missing: 0, outcome: 'succeeded' });
  });
});

describe('the weekly job (jobs/weekly-verify.ts)', () => {
  it('runs under schedule only with verifyCron set: a sampled verify of the days before the checkpoint, after the export', async () => {
    const root = await fx.tempDir();
    const env = fx.env(join(root, 'data'));
    expect((await runCli(['backfill', ...range, '--no-progress'], env)).code).toBe(0);
    const done = (job: string) => new RegExp(`"job":"${job}"[^\\n]*"msg":"job (finished|failed)"`);
    const schedule = async (config: Record<string, unknown>, jobs: string[]) => {
      await writeFile(join(root, 'config.json'), JSON.stringify(config));
      const s = startCli(['schedule', '--run-now', '--cron', '0 0 1 1 *', '--config', join(root, 'config.json'), '--log-level', 'info'], env);
      try {
        await waitFor(() => jobs.every((j) => done(j).test(s.output())), 60_000, `${jobs.join(' and ')} to run`);
        return s.output();
      } finally {
        s.kill('SIGTERM');
        await s.result;
      }
    };
    // Off by default: only the export runs.
    const off = await schedule({}, ['nightly-export']);
    expect(off).toMatch(/scheduler running: nightly-export at/);
    expect(off).not.toMatch(/weekly-verify/);
    expect(JSON.parse((await runCli(['status', '--json'], env)).stdout).lastVerification).toBeNull();

    const on = await schedule({ verifyCron: '0 4 * * 0', verifySample: 2, verifyRange: '5d' }, ['nightly-export', 'weekly-verify']);
    expect(on).toMatch(/scheduler running: nightly-export, weekly-verify at/);
    expect(on).toMatch(/"job":"weekly-verify"[^\n]*"msg":"job finished"/);
    const st = JSON.parse((await runCli(['status', '--json'], env)).stdout);
    const checkpointDay = Math.floor(Date.parse(st.checkpoint) / 1000 / D) * D;
    expect(st.lastVerification).toMatchObject({ days: 2, outcome: 'succeeded', missing: 0, gone: 0, changed: 0 });
    expect(st.lastVerification.range).toEqual({ from: new Date((checkpointDay - 5 * D) * 1000).toISOString().replace('.000Z', 'Z'), to: new Date(checkpointDay * 1000).toISOString().replace('.000Z', 'Z') });
  });
});

describe('format parquet: anomalies counted from the dataset', () => {
  const from = FROM - 35 * D;
  const windows = (END - from) / D;
  let held = END - D;
  while ([0, 6].includes(new Date(held * 1000).getUTCDay())) held -= D;
  // The backfill's one-day windows answer without most of the day; the next requests with all of it.
  const short = useEmulator(
    { seed: 37, from, to: TODAY, now: NOW, sessionsPerDay: 60, faults: { holdBack: [{ day: isoDay(held), fraction: 0.85, untilRequests: windows }] } },
    { prefix: 'session-etl-verify-parquet-' },
  );

  it('a short day of a Parquet-only store is flagged from its day files, and a repair clears it', async () => {
    const emu = short.emu;
    const dataDir = join(await fx.tempDir(), 'data');
    const env = { REPORTING_URL: emu.url, REPORTING_API_KEY: emu.apiKey, SESSION_ETL_DATA_DIR: dataDir };
    expect((await runCli(['backfill', '--from', isoDay(from), '--to', isoDay(END), '--format', 'parquet', '--no-progress'], env)).code).toBe(0);
    const stored = (await readParquetDataset(dataDir)).find((p) => p.partition === `date=${isoDay(held)}`)!.rows.length;
    const st = JSON.parse((await runCli(['status', '--json'], env)).stdout);
    expect(st.format).toBe('parquet');
    expect(st.volumeAnomalies).toEqual([{ date: isoDay(held), sessions: stored, expected: expect.any(Number) }]);
    expect(stored).toBeLessThan(st.volumeAnomalies[0].expected / 2);
    const repair = await runCli(['verify', '--from', isoDay(held), '--to', isoDay(held + D), '--repair', '--no-progress'], env);
    expect(repair.code, repair.stderr).toBe(0);
    expect(JSON.parse((await runCli(['status', '--json'], env)).stdout).volumeAnomalies).toEqual([]);
    expect((await readParquetDataset(dataDir)).find((p) => p.partition === `date=${isoDay(held)}`)!.rows.length).toBe(emu.dataset.sessionsStartedIn(held, held + D).length);
  });
});
