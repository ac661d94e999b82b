/**
 * `npm ci && npm start` builds the TypeScript once (issue 42, frictions): `npm ci`'s `prepare`
 * builds dist/, and `npm start`'s `prestart` builds again only when a source is newer than dist/ —
 * so `npm start` after an edit still runs what was edited. Run on a copy of the project (its
 * node_modules linked), so that the build it makes never touches the dist/ the other tests run.
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, rm, stat, symlink, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, REPO_ROOT } from '../helpers/cli.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function npmRun(script: string, cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', script], { cwd, env: { ...baseEnv(), npm_config_update_notifier: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('npm start builds only what changed (issue 42)', () => {
  it('prestart does not build a fresh dist/ again, and builds after a source is edited', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-prestart-'));
    dirs.push(dir);
    // What a clone holds after `npm ci` (dist/ built by its prepare), mtimes kept.
    for (const p of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'bin', 'src', 'jobs', 'bench', 'test/reliability', 'test/helpers', 'dist']) {
      await cp(join(REPO_ROOT, p), join(dir, p), { recursive: true, preserveTimestamps: true });
    }
    await symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
    const main = join(dir, 'dist', 'src', 'cli', 'main.js');
    // The build as npm ci left it: newer than every source.
    const built = new Date(Date.now() - 1000);
    await utimes(main, built, built);
    const old = new Date(Date.now() - 60_000);
    for (const p of ['package.json', 'tsconfig.json', 'tsconfig.build.json']) await utimes(join(dir, p), old, old);
    for (const p of ['src', 'jobs', 'bench', 'test/reliability', 'test/helpers']) await ageTree(join(dir, p), old);

    const fresh = await npmRun('prestart', dir);
    expect(fresh.code, fresh.output).toBe(0);
    expect(fresh.output).not.toMatch(/building|tsc/);
    expect(Math.round((await stat(main)).mtimeMs)).toBe(built.getTime());

    // An edit of a source file: the next `npm start` builds first.
    const now = new Date();
    await utimes(join(dir, 'src', 'cli', 'epipe.ts'), now, now);
    const edited = await npmRun('prestart', dir);
    expect(edited.code, edited.output).toBe(0);
    expect(edited.output).toMatch(/sources changed since the last build: building/);
    expect((await stat(main)).mtimeMs).toBeGreaterThan(built.getTime() + 1);
  }, 240_000);
});

describe('npm ci builds once; prepare again (the first npx session-etl of a clone) builds nothing (issue 42)', () => {
  it('prepare builds a fresh clone (no dist/), then does not build a fresh dist/ again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-prepare-'));
    dirs.push(dir);
    // A fresh clone: sources, no dist/.
    for (const p of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'bin', 'src', 'jobs', 'bench', 'test/reliability', 'test/helpers']) {
      await cp(join(REPO_ROOT, p), join(dir, p), { recursive: true, preserveTimestamps: true });
    }
    await symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
    const main = join(dir, 'dist', 'src', 'cli', 'main.js');
    const first = await npmRun('prepare', dir);
    expect(first.code, first.output).toBe(0);
    expect(first.output).toMatch(/dist\/ is not built yet: building/);
    const built = (await stat(main)).mtimeMs;

    const again = await npmRun('prepare', dir);
    expect(again.code, again.output).toBe(0);
    expect(again.output).not.toMatch(/building|tsc -p/);
    expect((await stat(main)).mtimeMs).toBe(built);
  }, 240_000);
});

/** Sets the times of a tree's files and folders to `t`. */
async function ageTree(path: string, t: Date): Promise<void> {
  for (const e of await readdir(path, { withFileTypes: true })) {
    if (e.isDirectory()) await ageTree(join(path, e.name), t);
    else await utimes(join(path, e.name), t, t);
  }
  await utimes(path, t, t);
}
