/**
 * Every documented way to start the long-running commands passes a stop (SIGTERM) on to the process
 * that does the work (issue 42, item 1). Each launcher is started as it starts the command, and
 * signalled as its supervisor would signal it: a container's PID 1 (the Dockerfile's CMD, the
 * Kubernetes container's command and args: the runtime execs them and `docker stop` / the kubelet
 * signal that process only), the systemd unit's ExecStart (exec'd through the installed command's
 * `#!/usr/bin/env node` link), `npx session-etl …` from the project directory and `npm start` (npm
 * signalled, as a terminal's `kill` or a supervisor of npm would). In every case the worker logs its
 * stop and ends, and no process of the launch is left behind (the process table is read for them).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { baseEnv, BIN, REPO_ROOT, waitFor } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';

const fx = useEmulator({ seed: 42, sessionsPerDay: 200, faults: { latencyMs: 150 } }, { prefix: 'session-etl-launchers-' });

interface Launched {
  child: ChildProcess;
  output(): string;
  /** Resolves when the launcher has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when every process holding the launch's output has closed it. */
  closed: Promise<void>;
}

const launched: Launched[] = [];
// A test cut short by its timeout does not reach its `finally`: nothing it started outlives the file.
afterAll(() => launched.forEach(cleanUp));

/** Starts `argv` as a supervisor would: no shell, its own process group, output captured. */
function launch(argv: string[], env: Record<string, string | undefined>, cwd = REPO_ROOT): Launched {
  const child = spawn(argv[0]!, argv.slice(1), { cwd, env: { ...baseEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const l = { child, output: () => out, exited, closed };
  launched.push(l);
  return l;
}

/** The processes alive now (zombies count as gone), each with its parent, process group and command line. */
function processTable(): Array<{ pid: number; ppid: number; pgid: number; cmd: string }> {
  const rows = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses.
      const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z' || state === 'X') continue;
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      rows.push({ pid: Number(name), ppid: Number(ppid), pgid: Number(pgid), cmd });
    } catch {
      // gone while read
    }
  }
  return rows;
}

/** `pid` and its descendants alive now. */
function tree(pid: number): Array<{ pid: number; cmd: string }> {
  const table = processTable();
  const out = table.filter((p) => p.pid === pid);
  for (let i = 0; i < out.length; i++) out.push(...table.filter((p) => p.ppid === out[i]!.pid));
  return out;
}

/** The processes of the launch's process group still alive (an orphan keeps the group, whoever adopts it). */
const group = (l: Launched) => processTable().filter((p) => p.pgid === l.child.pid);

/** The node process of the launch running `session-etl` (the launcher itself or one of its descendants). */
function worker(l: Launched): { pid: number; cmd: string } | undefined {
  return tree(l.child.pid!).find((p) => /^\S*node\S* \S*session-etl(\.js)? /.test(p.cmd));
}

/** After the test: nothing of the launch survives it, whatever the assertions said. */
function cleanUp(l: Launched): void {
  for (const p of group(l)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Signals the launcher's own PID only (PID-1 delivery), then expects a clean stop of the worker and no process of the launch left. */
async function stopAndCheck(l: Launched, stopLine: RegExp, what: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; workerPid: number }> {
  const w = worker(l);
  expect(w, `${what}: the worker in ${JSON.stringify(tree(l.child.pid!))}`).toBeDefined();
  process.kill(l.child.pid!, 'SIGTERM');
  const r = await l.exited;
  // The worker may outlive its launcher by the time its stop takes: wait for it, bounded by the
  // grace period (10 s) and some more; then whatever is left is an orphan.
  await waitFor(() => !processTable().some((p) => p.pid === w!.pid), 20_000, `${what}: the worker (pid ${w!.pid}) to end`).catch(() => undefined);
  const left = group(l);
  if (!left.length) await l.closed;
  expect(left, `${what}: processes left after the stop\n${l.output()}`).toEqual([]);
  expect(l.output(), what).toMatch(stopLine);
  // Stopped by the first signal (no "SIGTERM again: exiting now"), without a stack trace.
  expect(l.output(), what).not.toMatch(/again: exiting now|\n\s+at \S+ \(/);
  return { ...r, workerPid: w!.pid };
}

/**
 * A configuration file (the emulator, a key file, a start date five days back) and its data
 * directory; with `account`, an accounts map of that one account (as the manifest's ConfigMap has).
 */
async function schedulerConfig(account?: string): Promise<{ config: string; dataDir: string }> {
  const dir = await fx.tempDir();
  const keyFile = join(dir, 'reporting.key');
  await writeFile(keyFile, fx.emu.apiKey, { mode: 0o600 });
  const dataDir = join(dir, 'data');
  const config = join(dir, 'config.json');
  const startDate = new Date(Date.now() - 5 * 86_400_000).toISOString().slice(0, 10);
  const key = account ? { accounts: { [account]: { apiKeyFile: keyFile } } } : { apiKeyFile: keyFile, dataDir };
  await writeFile(config, JSON.stringify({ reportingUrl: fx.emu.url, startDate, ...key }));
  return { config, dataDir };
}

const schedulerUp = (l: Launched) => waitFor(() => /scheduler running/.test(l.output()) || l.child.exitCode !== null, 60_000, 'the scheduler');

/** The npm the tests run under, with a cache of their own (removed with the temporary directories). */
async function npmEnv(): Promise<Record<string, string>> {
  return {
    npm_config_cache: join(await fx.tempDir(), 'npm-cache'),
    // `npx` installs the project into its cache to run its bin, with the project's `prepare` (a
    // build): dist/ is built already (`npm test` builds first), and a build under the other tests' feet would break them.
    npm_config_ignore_scripts: 'true',
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
  };
}

describe('a SIGTERM to the launcher stops the worker (issue 42)', () => {
  it("the Dockerfile's CMD (exec form, node as PID 1): `docker stop`'s SIGTERM stops the scheduler, exit 0", async () => {
    const dockerfile = await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile);
    expect(cmd, 'the CMD line, in exec form').not.toBeNull();
    const argv = JSON.parse(cmd![1]!) as string[];
    expect(argv.slice(0, 2)).toEqual(['node', 'bin/session-etl.js']);
    expect(/^WORKDIR (.+)$/m.exec(dockerfile)?.[1]).toBe('/app');
    const { config } = await schedulerConfig();
    // WORKDIR /app is the checkout here; the image's PATH finds its node.
    const l = launch([process.execPath, ...argv.slice(1)], { SESSION_ETL_CONFIG: config });
    try {
      await schedulerUp(l);
      const r = await stopAndCheck(l, /"msg":"scheduler stopping"/, 'Dockerfile CMD');
      expect(r.workerPid).toBe(l.child.pid);
      expect(r.code, l.output()).toBe(0);
    } finally {
      cleanUp(l);
    }
  }, 90_000);

  it("the Kubernetes CronJob's container (command and args exec'd, node as PID 1): the kubelet's SIGTERM stops the export mid-run, exit 143", async () => {
    const docs = parseAllDocuments(await readFile(join(REPO_ROOT, 'config', 'kubernetes', 'cronjob.yaml'), 'utf8'), { version: '1.1' });
    const cronJob = (Array.isArray(docs) ? docs : [docs]).map((d) => d.toJS() as Record<string, any>).find((o) => o.kind === 'CronJob')!;
    const container = cronJob.spec.jobTemplate.spec.template.spec.containers[0] as { command: string[]; args: string[] };
    expect(container.command).toEqual(['node', '/app/bin/session-etl.js']);
    // The pod's paths here: /app the checkout, /data and the config a temporary directory; the
    // configuration one account on the emulator (the manifest's is three accounts in a bucket), as shard 0/1.
    const { config, dataDir } = await schedulerConfig('acme');
    const args = container.args.map((a) =>
      a === '/data' ? dataDir : a === '/etc/session-etl/config.json' ? config : a.replace('$(JOB_COMPLETION_INDEX)/4', '0/1'),
    );
    expect(args).toContain('export');
    const l = launch([process.execPath, BIN, ...args], {});
    try {
      await waitFor(() => /"msg":"(window committed|committed)"|windows/.test(l.output()) || l.child.exitCode !== null, 60_000, 'the export running');
      expect(l.child.exitCode, l.output()).toBeNull();
      const r = await stopAndCheck(l, /stopping/, 'Kubernetes container');
      expect(r.workerPid).toBe(l.child.pid);
      expect(r.code, l.output()).toBe(143);
    } finally {
      cleanUp(l);
    }
  }, 90_000);

  it("the systemd unit's ExecStart (the installed command, exec'd through its #!/usr/bin/env node link): KillSignal stops it, exit 0", async () => {
    const unit = await readFile(join(REPO_ROOT, 'config', 'systemd', 'session-etl.service'), 'utf8');
    const exec = /^ExecStart=(.+)$/m.exec(unit)![1]!.trim().split(/\s+/);
    expect(exec[0]).toBe('/usr/local/bin/session-etl');
    expect(/^KillSignal=(.+)$/m.exec(unit)?.[1]).toBe('SIGTERM');
    // What `npm install -g` makes: a link named session-etl to bin/session-etl.js.
    const binDir = join(await fx.tempDir(), 'bin');
    await mkdir(binDir);
    await symlink(BIN, join(binDir, 'session-etl'));
    const { config } = await schedulerConfig();
    const args = exec.slice(1).map((a, i, all) => (all[i - 1] === '--http-port' ? '0' : a));
    const l = launch([join(binDir, 'session-etl'), ...args], { SESSION_ETL_CONFIG: config });
    try {
      await schedulerUp(l);
      const r = await stopAndCheck(l, /"msg":"scheduler stopping"/, 'systemd ExecStart');
      expect(r.workerPid).toBe(l.child.pid);
      expect(r.code, l.output()).toBe(0);
    } finally {
      cleanUp(l);
    }
  }, 90_000);

  it('`npx session-etl schedule` from the project directory: a SIGTERM to npm stops the scheduler (logged), no orphan', async () => {
    const { config } = await schedulerConfig();
    const l = launch(['npx', 'session-etl', 'schedule'], { ...(await npmEnv()), SESSION_ETL_CONFIG: config });
    try {
      await schedulerUp(l);
      const r = await stopAndCheck(l, /"msg":"scheduler stopping"/, 'npx schedule');
      // npm runs the command under `sh -c`, which dies of the SIGTERM npm forwards without passing
      // it on: the worker, npm's grandchild, stops because its launcher went away.
      expect(r.workerPid).not.toBe(l.child.pid);
      expect(l.output()).toMatch(/session-etl: the process npm started it under \(pid \d+\) has exited: stopping as on SIGTERM/);
    } finally {
      cleanUp(l);
    }
  }, 120_000);

  it('`npx session-etl emulator`: a SIGTERM to npm stops the emulator (logged), no orphan', async () => {
    const l = launch(['npx', 'session-etl', 'emulator'], await npmEnv());
    try {
      await waitFor(() => /api key:/.test(l.output()) || l.child.exitCode !== null, 60_000, 'the emulator');
      await stopAndCheck(l, /emulator stopping \(SIGTERM\)/, 'npx emulator');
    } finally {
      cleanUp(l);
    }
  }, 120_000);

  it("`npm start` (the demo): a SIGTERM to npm reaches the backfill, which stops at a commit; npm waits for it", async () => {
    const dataDir = join(await fx.tempDir(), 'demo');
    const l = launch(['npm', 'start', '--', '--data-dir', dataDir, '--no-progress'], await npmEnv());
    try {
      await waitFor(() => /emulator: reporting endpoint/.test(l.output()) || l.child.exitCode !== null, 60_000, 'the demo');
      const r = await stopAndCheck(l, /stopping/, 'npm start');
      // npm waited for the demo, and reports how it ended: stopped by SIGTERM.
      expect(r.code, l.output()).toBe(143);
    } finally {
      cleanUp(l);
    }
  }, 120_000);
});
