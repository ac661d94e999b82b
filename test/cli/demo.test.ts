/**
 * `demo` deletes only what it can prove is its own (issue 13): it marks the directories it creates,
 * refuses any other non-empty one (a real export), and refuses to start afresh in its own directory
 * when anything there is not a file it writes.
 */
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { withEmulator } from '../helpers/emulator-fixture.js';
import { runBackfill } from '../../src/pipeline/run.js';
import { runCli } from '../helpers/cli.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { D } from '../helpers/time.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-demo-'));
  dirs.push(d);
  return d;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const demo = (dataDir: string, ...more: string[]) =>
  runCli(['demo', '--data-dir', dataDir, '--days', '2', '--sessions-per-day', '20', '--no-progress', '--json', ...more]);

/** Every path under `dir` with its contents (directories as 'dir'), links not followed. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string, rel: string) => {
    for (const n of await readdir(d)) {
      const st = await lstat(join(d, n));
      if (st.isDirectory()) {
        out[`${rel}${n}/`] = 'dir';
        await walk(join(d, n), `${rel}${n}/`);
      } else out[`${rel}${n}`] = (await readFile(join(d, n))).toString('base64');
    }
  };
  await walk(dir, '');
  return out;
}

describe('demo never deletes what it did not write', () => {
  it('refuses a real export (exit 2, naming it), with or without --keep, and leaves it exactly as it was', async () => {
    const now = Math.floor(Date.now() / 1000);
    const from = Math.floor(now / D) * D - 3 * D;
    const dataDir = join(await tempDir(), 'export');
    await withEmulator({ seed: 9, from, to: now, now, sessionsPerDay: 30 }, (emu) =>
      runBackfill({ reportingUrl: emu.url, apiKey: emu.apiKey, dataDir, format: 'both', from, to: from + 2 * D }),
    );
    const before = await tree(dataDir);
    const rows = (await readDuckDbSessions(dataDir)).length;
    expect(rows).toBeGreaterThan(0);
    for (const more of [[], ['--keep']]) {
      const r = await demo(dataDir, ...more);
      expect({ more, code: r.code }).toEqual({ more, code: 2 });
      expect(r.stderr).toContain(dataDir);
      expect(r.stderr).toMatch(/not created by the demo/);
    }
    expect(await tree(dataDir)).toEqual(before);
  }, 60_000);

  it('creates and marks its directory, starts afresh there, and refuses when files of others appear anywhere in it', async () => {
    const dataDir = join(await tempDir(), 'demo');
    const first = await demo(dataDir);
    expect(first.code).toBe(0);
    expect(existsSync(join(dataDir, '.session-etl-demo'))).toBe(true);
    expect((await readdir(join(dataDir, 'parquet', 'sessions'))).length).toBeGreaterThan(0);
    // Its own directory, only its own files: starts afresh.
    const again = await demo(dataDir);
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: expect.any(String) });

    const partition = (await readdir(join(dataDir, 'parquet', 'sessions')))[0]!;
    for (const theirs of ['parquet/notes.txt', `parquet/sessions/${partition}/extra.parquet`, 'pending/mine.ndjson', 'dashboards/q.sql', 'notes.md']) {
      await mkdir(join(dataDir, theirs, '..'), { recursive: true });
      await writeFile(join(dataDir, theirs), 'theirs');
      const before = await tree(dataDir);
      const r = await demo(dataDir);
      expect({ theirs, code: r.code }).toEqual({ theirs, code: 2 });
      expect(r.stderr).toContain(join(dataDir, theirs.startsWith('dashboards/') ? 'dashboards' : theirs));
      expect(await tree(dataDir)).toEqual(before);
      await rm(join(dataDir, theirs.startsWith('dashboards/') ? 'dashboards' : theirs), { recursive: true });
    }
  }, 120_000);

  it('an existing empty directory is fine', async () => {
    const dataDir = await tempDir();
    const r = await demo(dataDir);
    expect(r.code).toBe(0);
    expect(existsSync(join(dataDir, '.session-etl-demo'))).toBe(true);
  }, 60_000);
});
