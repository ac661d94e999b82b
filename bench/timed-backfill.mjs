/**
 * The two pieces bench/compare-builds.mjs and bench/peak-composition.mjs share: the bench's
 * emulator process (365 days of `sessions` sessions, its bodies cached), and one build's backfill
 * of those days under /usr/bin/time with its wall time, peak (VmHWM), CPU and data directory size.
 */
import { spawn, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

const D = 86400;
export const DAYS = 365;

/** Starts dist/bench/emulator-process.js of `root`; resolves its URL, key and the days it serves. */
export async function startBenchEmulator(root, sessions, long) {
  const today = Math.floor(Date.now() / 1000 / D) * D;
  const from = today - (DAYS + 1) * D;
  const to = from + DAYS * D;
  const opts = { seed: 1, from, to: to + D, sessionsPerDay: sessions / DAYS, cacheBodies: { maxBytes: 3 * 2 ** 30 }, ...(long ? { longNotes: true } : {}) };
  const child = spawn(process.execPath, [join(root, 'dist', 'bench', 'emulator-process.js'), JSON.stringify(opts)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const { url, apiKey } = JSON.parse(await new Promise((r) => createInterface({ input: child.stdout }).once('line', r)));
  return { url, apiKey, from, to, day: D, stop: () => child.stdin.end() };
}

const iso = (t) => new Date(t * 1000).toISOString().slice(0, 10);

/**
 * `session-etl backfill` of the emulator's days by the build in `dir` into `data` (removed after),
 * with `env` as its whole environment and `node` flags before the script, inside the memory cgroup
 * directory `cgroup` when given (the shell moves itself in, then becomes the command). Resolves the exit code, whether the OOM killer's signal ended it,
 * stdout, stderr and (from /usr/bin/time) wall seconds, peak MiB and CPU seconds, and the directory's bytes.
 */
export function timedBackfill({ dir, data, emu, env, node = [], args = [], cgroup }) {
  return new Promise((resolve) => {
    const argv = ['-f', '%e %M %U %S', process.execPath, ...node, `${dir}/bin/session-etl.js`, 'backfill', '--from', iso(emu.from), '--to', iso(emu.to), '--data-dir', data, '--json', '--log-level', 'warn', ...args];
    const cmd = cgroup ? ['sh', ['-c', `echo $$ > '${join(cgroup, 'cgroup.procs')}' && exec "$0" "$@"`, '/usr/bin/time', ...argv]] : ['/usr/bin/time', argv];
    const p = spawn(cmd[0], cmd[1], { env: { ...env, REPORTING_URL: emu.url, REPORTING_API_KEY: emu.apiKey }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('exit', (code) => {
      const [wall, rssKiB, user, sys] = err.trim().split('\n').pop().split(' ').map(Number);
      let bytes = 0;
      try { bytes = Number(execFileSync('du', ['-sb', data]).toString().split('\t')[0]); } catch {}
      rmSync(data, { recursive: true, force: true });
      // /usr/bin/time names a signal that ended the command (the OOM killer's is 9).
      resolve({ code, killed: /Command terminated by signal 9/.test(err), out, err, wall, rssMiB: rssKiB / 1024, cpu: user + sys, bytes });
    });
  });
}
