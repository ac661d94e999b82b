/**
 * The README's example commands work as pasted (issue 42, "examples that work as pasted"): its
 * emulator line is started (on a free port instead of 8080), then every backfill, export and verify
 * of the README runs, in the README's order, in one working directory, as a new user would paste them.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli, startCli, waitFor } from '../helpers/cli.js';

/** The `npx session-etl …` lines of the README's sh blocks: comments and a trailing `&` dropped, `[optional]` parts kept. */
async function readmeCommands(): Promise<string[][]> {
  const text = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
  const out: string[][] = [];
  for (const block of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const line of block[1]!.split('\n')) {
      const m = /^npx session-etl (.*)$/.exec(line.trim());
      if (!m) continue;
      const words = m[1]!.replace(/\s+#.*$/, '').replace(/\s*&$/, '').replace(/[[\]]/g, '').trim().split(/\s+/);
      out.push(words);
    }
  }
  return out;
}

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

describe('README example commands', () => {
  it('run as pasted against the README\'s emulator: each exits 0 and the history holds sessions', async () => {
    const commands = await readmeCommands();
    const emulatorLine = commands.find((c) => c[0] === 'emulator');
    expect(emulatorLine, 'the README starts the emulator').toBeDefined();
    const runs = commands.filter((c) => ['backfill', 'export', 'verify'].includes(c[0]!));
    expect(runs.map((c) => c[0])).toEqual(['backfill', 'export', 'export', 'backfill', 'verify']);

    const text = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
    const apiKey = /^export REPORTING_API_KEY=(\S+)/m.exec(text)?.[1];
    expect(apiKey).toBe('emulator-reporting-key');
    const emu = startCli(emulatorLine!.map((w, i, all) => (all[i - 1] === '--port' ? '0' : w)));
    cleanup.push(async () => {
      emu.kill('SIGTERM');
      await emu.result;
    });
    await waitFor(() => /reporting endpoint: (\S+)/.test(emu.output()), 20_000, 'the emulator');
    const url = /reporting endpoint: (\S+)/.exec(emu.output())![1]!;

    const cwd = await mkdtemp(join(tmpdir(), 'session-etl-readme-'));
    cleanup.push(() => rm(cwd, { recursive: true, force: true }));
    const env = { REPORTING_URL: url, REPORTING_API_KEY: apiKey! };
    for (const args of runs) {
      const r = await runCli([...args, '--no-progress'], env, cwd);
      expect({ args: args.join(' '), code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ args: args.join(' '), code: 0, stderr: '' });
    }
    // The history of the first backfill and the first export is there: every day of 2026-01-01 … 2026-03-07.
    const status = await runCli(['sessions', '--data-dir', join(cwd, 'data'), '--output', 'json', '--page-size', '1', '--from', '2026-01-01', '--to', '2026-03-08'], {});
    expect(status.code).toBe(0);
    const total = (JSON.parse(status.stdout) as { total: number }).total;
    expect(total).toBeGreaterThan(60 * 100);
    for (const [from, to] of [['2026-01-01', '2026-01-02'], ['2026-03-07', '2026-03-08']]) {
      const day = await runCli(['sessions', '--data-dir', join(cwd, 'data'), '--output', 'json', '--page-size', '1', '--from', from!, '--to', to!], {});
      expect((JSON.parse(day.stdout) as { total: number }).total, `${from}`).toBeGreaterThan(0);
    }
  }, 300_000);
});
