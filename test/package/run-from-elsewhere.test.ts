/**
 * The README's way to run session-etl from outside the clone (issue 38): `npx --prefix <clone>
 * session-etl …` from another directory runs the clone's command, with paths relative to where the
 * user is.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, REPO_ROOT } from '../helpers/cli.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function run(argv: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env: { ...baseEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('running session-etl from outside the clone', () => {
  it('`npx --prefix <clone> session-etl` from another directory: the version, and a command with its options', async () => {
    const readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('npx --prefix /path/to/clone session-etl');
    const elsewhere = await mkdtemp(join(tmpdir(), 'session-etl-elsewhere-'));
    dirs.push(elsewhere);
    // Its own npm cache; the project's prepare (a build) skipped: dist/ is built, and the other tests run it.
    const env = { npm_config_cache: join(elsewhere, '.npm'), npm_config_ignore_scripts: 'true', npm_config_update_notifier: 'false' };
    const { version } = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    const v = await run(['npx', '--prefix', REPO_ROOT, 'session-etl', '--version'], elsewhere, env);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout.trim()).toBe(version);
    const cfg = await run(['npx', '--prefix', REPO_ROOT, 'session-etl', 'config', '--data-dir', 'mine', '--json'], elsewhere, env);
    expect(cfg.code, cfg.stderr).toBe(0);
    const shown = JSON.parse(cfg.stdout) as { values: Array<{ key: string; value: unknown }> };
    expect(shown.values.find((x) => x.key === 'dataDir')?.value).toBe('mine');
  }, 120_000);
});
