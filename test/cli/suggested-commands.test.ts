/**
 * The commands session-etl suggests carry the flags the user gave (issue 38, new user; issue 40:
 * one builder, one shell quoter): a data directory and a configuration file given only as flags,
 * with spaces and a quote in their paths, are in the command `verify` suggests and in the one
 * `status --check` suggests; pasted into a shell, each runs against the same data.
 */
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shellQuote, suggestedCommand } from '../../src/util/suggested-command.js';
import { BIN, baseEnv, runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const TODAY = Math.floor(NOW / D) * D;
const FROM = TODAY - 8 * D;
const END = TODAY - 2 * D;
const AMENDED = FROM + 2 * D;

const fx = useEmulator({ seed: 40, from: FROM, to: TODAY, now: NOW, sessionsPerDay: 30 }, { prefix: 'session-etl-suggest-' });

/** Runs `command` with sh in `cwd`, `session-etl` on the PATH as an installed package puts it (not spawnSync: the emulator answers from this process). */
function paste(command: string, cwd: string, bin: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('sh', ['-c', command], { cwd, env: { ...baseEnv(), ...env, PATH: `${bin}:${process.env.PATH}` } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('suggested commands', () => {
  it('carry --data-dir and --config as given, quoted: pasted into a shell, they run against the same data', async () => {
    const root = await fx.tempDir();
    const bin = join(root, 'bin');
    await mkdir(bin);
    await writeFile(join(bin, 'session-etl'), `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(BIN)} "$@"\n`, { mode: 0o755 });
    await mkdir(join(root, 'conf dir'));
    // The endpoint only in the configuration file, the data directory only as a flag: a command
    // without either would not reach the same data.
    await writeFile(join(root, 'conf dir', "it's.json"), JSON.stringify({ reportingUrl: fx.emu.url }));
    const env = { REPORTING_API_KEY: fx.emu.apiKey };
    const flags = ['--data-dir', "my data's dir", '--config', "conf dir/it's.json"];
    const cli = (args: string[]) => runCli([...args, ...flags], env, root);

    expect((await cli(['backfill', '--from', isoDay(FROM), '--to', isoDay(AMENDED), '--no-progress'])).code).toBe(0);
    expect((await cli(['backfill', '--from', isoDay(AMENDED + D), '--to', isoDay(END), '--no-progress'])).code).toBe(0);

    // status --check: a coverage hole, and the status command that shows it.
    const check = await cli(['status', '--check', '--max-lag', '30d']);
    expect(check.code).toBe(1);
    const status = /run `([^`]+)` to see them/.exec(check.stdout)?.[1];
    expect(status).toBe(`session-etl status --data-dir 'my data'\\''s dir' --config 'conf dir/it'\\''s.json'`);
    const shown = await paste(status!, root, bin, env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`coverage holes  ${new Date(AMENDED * 1000).toISOString().replace('.000Z', 'Z')}`);

    // verify: two sessions amended at the source; the command it suggests repairs them in that store.
    expect((await cli(['backfill', '--from', isoDay(AMENDED), '--to', isoDay(AMENDED + D), '--no-progress'])).code).toBe(0);
    fx.emu.setFaults({ amend: [{ day: isoDay(AMENDED), count: 2 }] });
    const found = await cli(['verify', '--from', isoDay(FROM), '--to', isoDay(END), '--no-progress']);
    expect(found.code).toBe(1);
    const repair = /with `([^`]+ --repair)`/.exec(found.stderr)?.[1];
    expect(repair).toBe(`session-etl verify --from ${isoDay(FROM)} --to ${isoDay(END)} --data-dir 'my data'\\''s dir' --config 'conf dir/it'\\''s.json' --repair`);
    const repaired = await paste(`${repair} --no-progress`, root, bin, env);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stdout).toContain('repaired       2 session(s) committed');
    expect((await cli(['verify', '--from', isoDay(FROM), '--to', isoDay(END), '--no-progress'])).code).toBe(0);
  });

  it.each([
    ['plain words as they are', 'verify', ['--from', '2026-01-01'], { dataDir: '/srv/data', config: null }, 'session-etl verify --from 2026-01-01 --data-dir /srv/data'],
    ['an account is quoted like the rest', 'backfill', [], { account: 'acme; rm -rf ~', config: null }, "session-etl backfill --account 'acme; rm -rf ~'"],
    ['a quote inside a word', 'status', [], { dataDir: "it's", config: 'a b.json' }, `session-etl status --data-dir 'it'\\''s' --config 'a b.json'`],
  ])('%s', (_name, command, args, target, want) => {
    expect(suggestedCommand(command, args, target)).toBe(want);
  });
});
