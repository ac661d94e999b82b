/**
 * The memory budget inside a real memory cgroup (issue 31): the built CLI runs in a cgroup this test
 * creates (v1's memory controller, or v2's where the memory controller is enabled), with no memory
 * setting at all. In the smallest container a run starts in (MIN_CONTAINER, 384 MiB) a long-text
 * backfill completes and every session is stored; in 96 MiB, 320 MiB and just below MIN_CONTAINER
 * the run refuses at start (exit 2, naming the minimum) and writes nothing; `config` shows the
 * budget read from the cgroup. The scheduler in MIN_CONTAINER runs 3 scheduled long-text exports
 * without being killed.
 *
 * Needs root and a writable memory cgroup hierarchy. Without them the tests are skipped with the
 * reason, except under CI=true, where not being able to create the cgroup fails them.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MIN_CONTAINER, MiB } from '../../src/config/memory-budget.js';
import { baseEnv, BIN, type CliResult } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { readDuckDbSessions } from '../helpers/read-store.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 10 * D;
const TO = FROM + 6 * D;

/** A memory cgroup this test may create children in: v1's memory controller, or a cgroup2 mount with memory enabled. */
function cgroupParent(): { dir: string; version: 1 | 2 } | string {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root (creating a cgroup needs root)';
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  for (const line of mounts) {
    const [left, right] = line.split(' - ');
    const point = left?.split(' ')[4];
    const [fstype, , opts] = (right ?? '').split(' ');
    if (!point) continue;
    if (fstype === 'cgroup' && (opts ?? '').split(',').includes('memory')) return { dir: point, version: 1 };
    if (fstype === 'cgroup2') {
      const controllers = readFileSync(join(point, 'cgroup.subtree_control'), 'utf8').split(/\s+/);
      if (controllers.includes('memory')) return { dir: point, version: 2 };
    }
  }
  return 'no memory cgroup mounted (v1 memory controller, or cgroup2 with memory in cgroup.subtree_control)';
}

const parent = cgroupParent();
const made: string[] = [];

/** Creates a memory cgroup limited to `bytes` (swap too, where v1 accounts it); returns its directory. */
function makeCgroup(bytes: number): string {
  if (typeof parent === 'string') throw new Error(parent);
  const dir = join(parent.dir, `session-etl-test-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir);
  made.push(dir);
  if (parent.version === 1) {
    writeFileSync(join(dir, 'memory.limit_in_bytes'), String(bytes));
    if (existsSync(join(dir, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(bytes));
  } else {
    writeFileSync(join(dir, 'memory.max'), String(bytes));
    if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
  }
  return dir;
}

/** Runs the built CLI inside `cgroup` (the shell moves itself in, then becomes node). */
function runInCgroup(cgroup: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  return startInCgroup(cgroup, args, env).result;
}

/** Starts the built CLI inside `cgroup`; `output()` is what it printed so far. */
function startInCgroup(cgroup: string, args: string[], env: Record<string, string>) {
  const t0 = Date.now();
  const child = spawn('sh', ['-c', `echo $$ > '${join(cgroup, 'cgroup.procs')}' && exec "$0" "$@"`, process.execPath, BIN, ...args], {
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const result = new Promise<CliResult>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, durationMs: Date.now() - t0 })));
  return { child, result, stdout: () => stdout, stderr: () => stderr };
}

afterAll(() => {
  for (const dir of made.reverse()) {
    // The processes have exited; a cgroup without tasks can be removed.
    try {
      rmdirSync(dir);
    } catch (err) {
      process.stderr.write(`could not remove the test cgroup ${dir}: ${(err as Error).message}\n`);
    }
  }
});

const fx = useEmulator({ seed: 31, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 2_500, longNotes: true }, { prefix: 'session-etl-memory-' });
const skip = typeof parent === 'string' && process.env.CI !== 'true';

describe.skipIf(skip)(`memory budget in a real memory cgroup${typeof parent === 'string' ? ` (skipped: ${parent})` : ''}`, () => {
  it('can create a memory cgroup (under CI=true a machine that cannot fails here)', () => {
    expect(typeof parent === 'string' ? parent : 'ok').toBe('ok');
  });

  it(`the smallest container a run starts in (MIN_CONTAINER, ${MIN_CONTAINER / MiB} MiB), no memory setting: config shows the budget from the cgroup, and the long-text backfill completes, never killed, every session and note stored`, async () => {
    const cg = makeCgroup(MIN_CONTAINER);
    const dataDir = join(await fx.tempDir(), 'data');
    const env = fx.env(dataDir);
    const config = await runInCgroup(cg, ['config', '--json'], env);
    expect(config.code, config.stderr).toBe(0);
    const memory = (JSON.parse(config.stdout) as { memory: { bytes: number; source: string; from: string } }).memory;
    expect(memory).toMatchObject({ bytes: MIN_CONTAINER, source: 'cgroup' });
    expect(memory.from).toContain(cg.split('/').pop());

    const r = await runInCgroup(cg, ['backfill', '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'debug'], env);
    expect(r.signal, `killed (the kernel OOM-kills with SIGKILL): ${r.stderr.slice(-3000)}`).toBeNull();
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    // The debug log says the budget and its split.
    expect(r.stderr).toMatch(new RegExp(`memory budget: ${MIN_CONTAINER / MiB} MiB from cgroup v\\d limit .*DuckDB \\d+ MiB.*row groups of`));
    const stored = await readDuckDbSessions(dataDir);
    const truth = fx.emu.dataset.sessionsStartedIn(FROM, TO + 1);
    expect(truth.length).toBeGreaterThan(10_000);
    expect(stored.map((s) => s.session_id)).toEqual(truth.map((s) => s.id).sort());
    // The long notes themselves, whole.
    const notes = new Map(truth.map((t) => [t.id, t.externalFields?.notes ?? null]));
    expect(stored.filter((s) => s.external_notes !== notes.get(s.session_id)).map((s) => s.session_id)).toEqual([]);
    // DuckDB's spill directory is gone when the run ends.
    expect(existsSync(join(dataDir, '.tmp', 'duckdb'))).toBe(false);
  }, 120_000);

  it.each([96, 320, MIN_CONTAINER / MiB - 16])('%d MiB: refused at start (exit 2) naming the minimum and how to give more; nothing written', async (mib) => {
    const cg = makeCgroup(mib * MiB);
    const dataDir = join(await fx.tempDir(), 'data');
    const r = await runInCgroup(cg, ['backfill', '--from', isoDay(FROM), '--to', isoDay(TO)], fx.env(dataDir));
    expect(r.signal).toBeNull();
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`the container's memory limit is ${mib} MiB (cgroup v`);
    expect(r.stderr).toContain(`give the container at least ${MIN_CONTAINER / MiB} MiB`);
    expect(existsSync(dataDir)).toBe(false);
  }, 60_000);

  it('the scheduler in the smallest container (MIN_CONTAINER), no memory setting: 3 scheduled long-text exports, each re-reading every day, none killed, all succeeded', async () => {
    const cg = makeCgroup(MIN_CONTAINER);
    const dir = await fx.tempDir();
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ startDate: isoDay(FROM), lookback: `${Math.ceil((NOW - FROM) / D) + 1}d` }));
    const s = startInCgroup(cg, ['schedule', '--cron', '*/10 * * * * *', '--config', config, '--json', '--log-level', 'warn', '--no-progress'], fx.env(join(dir, 'data')));
    const summaries = () => s.stdout().split('\n').filter((l) => l.startsWith('{') && l.includes('"outcome"'));
    try {
      const end = Date.now() + 240_000;
      while (summaries().length < 3 && s.child.exitCode === null && s.child.signalCode === null && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
      expect(s.child.signalCode, `killed (the kernel OOM-kills with SIGKILL): ${s.stderr().slice(-2000)}`).toBeNull();
      expect(s.child.exitCode, s.stderr().slice(-2000)).toBeNull();
      expect(summaries().length, s.stderr().slice(-2000)).toBeGreaterThanOrEqual(3);
      const written = summaries().map((l) => JSON.parse(l) as { outcome: string; sessions: { written: number } });
      for (const w of written) expect(w.outcome).toBe('succeeded');
      // The first run wrote the long-text history (re-read by each run after it).
      expect(written[0]!.sessions.written).toBeGreaterThan(10_000);
    } finally {
      s.child.kill('SIGTERM');
      await s.result;
    }
    const r = await s.result;
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
  }, 300_000);
});
