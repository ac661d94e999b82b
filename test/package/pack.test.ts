/**
 * The package a user installs (issue 33): `npm pack` holds what runs (the CLI, the library, the
 * jobs, the dashboard's assets, the deployment files and the docs) and nothing of the tests, the
 * bench or CI; installed from the tarball into an empty project, its command runs: --version, the
 * emulator, and the demo. Needs dist/ (`npm test` builds first); dependencies come from npm's cache
 * (filled by `npm ci`), else the registry.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, baseEnv, waitFor } from '../helpers/cli.js';

const run = promisify(execFile);
const npm = (args: string[], cwd: string) => run('npm', args, { cwd, env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }, maxBuffer: 64 << 20 });

let work = '';
let files: string[] = [];
let tarball = '';
let installed = '';
const version = (JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'session-etl-pack-'));
  // --ignore-scripts: dist/ is built already; `prepare` would build it again.
  const packed = await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], REPO_ROOT);
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  files = info!.files.map((f) => f.path);
  tarball = join(work, info!.filename);
  installed = join(work, 'app');
  await run('mkdir', ['-p', installed]);
  await writeFile(join(installed, 'package.json'), JSON.stringify({ name: 'uses-session-etl', version: '1.0.0', private: true }));
  await npm(['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], installed);
}, 600_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const bin = () => join(installed, 'node_modules', '.bin', 'session-etl');
const cli = (args: string[], cwd = installed) => run(bin(), args, { cwd, env: { ...baseEnv() }, maxBuffer: 64 << 20 });

describe('the packed package', () => {
  it('holds the CLI, the library, the jobs, the dashboard assets, config/ and the docs; no tests, bench or CI', () => {
    for (const f of [
      'package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'bin/session-etl.js',
      'dist/src/cli/main.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/jobs/nightly-export.js',
      'src/dashboard/assets/index.html', 'src/dashboard/assets/app.js',
      'config/alerts.yml', 'config/kubernetes/cronjob.yaml', 'config/systemd/session-etl.service',
      'config/examples/one-account.json', 'config/examples/many-accounts.json', 'config/examples/object-storage.json',
      'docs/design.md', 'docs/configuration.md', 'docs/accounts.md', 'docs/object-storage.md',
    ]) expect(files, f).toContain(f);
    const unwanted = files.filter((f) => /^(test|bench|\.ci|dist\/test|dist\/bench|data)\//.test(f) || /^src\/(?!dashboard\/assets\/)/.test(f) || /\.test\.[jt]s$/.test(f));
    expect(unwanted).toEqual([]);
  });

  it('installed from the tarball into an empty project: --version matches package.json and the CHANGELOG', async () => {
    const v = await cli(['--version']);
    expect(v.stdout.trim()).toBe(version);
    const changelog = await readFile(join(installed, 'node_modules', 'session-etl', 'CHANGELOG.md'), 'utf8');
    expect(/^## \[?(\d+\.\d+\.\d+)/m.exec(changelog)?.[1]).toBe(version);
  });

  it("the installed package's prepare script (bin/build-if-stale.js) builds nothing: it ships dist/ and none of the sources", async () => {
    const pkg = join(installed, 'node_modules', 'session-etl');
    const main = join(pkg, 'dist', 'src', 'cli', 'main.js');
    const before = (await stat(main)).mtimeMs;
    const r = await run('node', [join(pkg, 'bin', 'build-if-stale.js')], { cwd: pkg, env: { ...baseEnv() } });
    expect(r.stderr).toBe('');
    expect((await stat(main)).mtimeMs).toBe(before);
  });

  it('runs the emulator and the demo from the installed package', async () => {
    const child = spawn(bin(), ['emulator', '--port', '0', '--sessions-per-day', '20'], { cwd: installed, env: { ...baseEnv() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(() => /reporting endpoint: http:\/\/127\.0\.0\.1:\d+\//.test(out), 30_000, 'the emulator to listen');
      const url = /reporting endpoint: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)![1]!;
      const to = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000);
      const from = new Date(to.getTime() - 3 * 86_400_000);
      const b = await run(bin(), ['backfill', '--from', from.toISOString(), '--to', to.toISOString(), '--data-dir', 'exported', '--json', '--no-progress'], {
        cwd: installed,
        env: { ...baseEnv(), REPORTING_URL: url, REPORTING_API_KEY: 'emulator-reporting-key' },
      });
      expect((JSON.parse(b.stdout) as { sessions: { new: number } }).sessions.new).toBeGreaterThan(0);
    } finally {
      child.kill('SIGTERM');
    }
    const demo = await cli(['demo', '--days', '3', '--sessions-per-day', '40', '--json', '--no-progress']);
    const summary = JSON.parse(demo.stdout) as { sessions: { new: number } };
    expect(summary.sessions.new).toBeGreaterThan(0);
    const status = await cli(['status', '--data-dir', join('data', 'demo'), '--json']);
    expect((JSON.parse(status.stdout) as { rows: number }).rows).toBe(summary.sessions.new);
  }, 180_000);
});
