/**
 * What "written" means (issues 38 and 42 #8): an export where nothing changed writes 0, rewrites no
 * day partition, and says where the records fetched went; the metrics textfile's
 * `session_etl_sessions_written_total` counts what its help says (new or changed), re-read
 * sessions go to `session_etl_sessions_unchanged_total`. The built CLI against the emulator.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/pipeline/run.js';
import { runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { samples, value } from './helpers.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;

// The emulator's clock pinned: what it serves does not change between the two exports.
const fx = useEmulator({ seed: 31, from: FROM - D, now: NOW, sessionsPerDay: 60 }, { prefix: 'session-etl-written-' });

describe('an export where nothing changed', () => {
  it('writes 0, rewrites no partition, says where the records went; the metrics agree', async () => {
    const dir = await fx.tempDir();
    const dataDir = join(dir, 'store');
    await mkdir(join(dir, 'textfile'));
    const file = join(dir, 'textfile', 'session_etl.prom');

    const first = await runCli(['export', '--since', isoDay(FROM), '--json', '--no-progress', '--metrics-file', file], fx.env(dataDir));
    expect(first.code).toBe(0);
    const s1 = (JSON.parse(first.stdout) as RunSummary).sessions;
    // Records fetched = sessions written + unchanged + second copies of the sessions on a window boundary.
    expect(s1.repeated).toBeGreaterThan(0);
    expect(s1.fetched).toBe(s1.written + s1.unchanged! + s1.repeated!);
    expect(value(await readFile(file, 'utf8'), 'session_etl_sessions_written_total')).toBe(s1.written);

    const again = await runCli(['export', '--no-progress', '--metrics-file', file], fx.env(dataDir));
    expect(again.code).toBe(0);
    const unchanged = Number(/ (\d+) unchanged \(read again as stored\)/.exec(again.stdout)?.[1]);
    expect(unchanged).toBeGreaterThan(0);
    expect(again.stdout).toMatch(/^ {2}sessions {7}0 written \(0 new, 0 updated\), \d+ unchanged \(read again as stored\), 0 rejected$/m);
    // Where the records fetched went: none written, the rest unchanged or a second copy of a session on a window boundary.
    const records = /^ {2}records {8}(\d+) fetched = 0 written \+ (\d+) unchanged(?: \+ (\d+) duplicates across windows \(a session on a window boundary comes in both\))?$/m.exec(again.stdout);
    expect(records).not.toBeNull();
    expect(Number(records![2])).toBe(unchanged);
    expect(Number(records![1])).toBe(unchanged + Number(records![3] ?? 0));
    // Sessions read again as stored stay as they were: no day is rewritten.
    expect(again.stdout).toMatch(/\(0 partitions rewritten\)$/m);
    const metrics = await readFile(file, 'utf8');
    expect(value(metrics, 'session_etl_sessions_written_total')).toBe(0);
    expect(value(metrics, 'session_etl_sessions_unchanged_total')).toBe(unchanged);
    expect(samples(metrics).find((x) => x.name === 'session_etl_sessions_written_total')).toBeDefined();
  });
});
