/**
 * A full disk during a write. The data directory lives on a small tmpfs (`mount -t tmpfs -o size=…`,
 * needs root); a first backfill fits, then a filler file leaves only a little room and a larger
 * backfill runs into ENOSPC — at different points depending on how much room is left (the DuckDB
 * WAL, a checkpoint, the Parquet COPY, a pending file). The run must fail clearly (exit 1, "disk is
 * full"), what was committed before must stay readable and intact, and once room is made the same
 * command completes the data exactly.
 *
 * Where mounting is refused (not root, or a sandbox), the fallback injects ENOSPC with the
 * test-only SESSION_ETL_FAULT hook (src/util/crash-point.ts) inside the DuckDB transaction and
 * inside the Parquet rewrite; the result row says which method ran.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '../../src/emulator/index.js';
import {
  check, cliEnv, dayStart, DAY, excerpt, isoDay, newResult, startCli, TempDirs, timed, truthBetween, type ScenarioResult,
} from './harness.js';
import { checkCrashInvariants, checkFinal, readStore } from './inspect-store.js';
import { watchParquet } from './parquet-watcher.js';

export interface FullDiskOptions {
  seed: number;
  /** Bytes left free before the failing run; one trial each. */
  leaveFree?: number[];
  log?: (line: string) => void;
}

function tryMount(dir: string, size: string): boolean {
  if (process.getuid?.() !== 0 || process.env.RELIABILITY_NO_MOUNT) return false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function fill(path: string, bytes: number): Promise<void> {
  const fh = await open(path, 'w');
  try {
    const block = Buffer.alloc(1 << 20, 0x5a);
    let left = bytes;
    while (left > 0) {
      const n = Math.min(left, block.length);
      await fh.write(block, 0, n);
      left -= n;
    }
  } finally {
    await fh.close();
  }
}

export async function runFullDisk(o: FullDiskOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {});
  const r = newResult('4. bad input', 'a full disk during a write');
  const nowS = Math.floor(Date.now() / 1000);
  const from = dayStart(30, nowS);
  const mid = from + 3 * DAY;
  const to = from + 24 * DAY;
  const emu = await startEmulator({ seed: (o.seed % 1000) + 2, from: from - DAY, to: nowS, now: nowS, sessionsPerDay: 150 });
  const temp = new TempDirs();
  const truthA = truthBetween(emu, from, mid);
  const truthAll = truthBetween(emu, from, to);
  const argsA = ['backfill', '--from', isoDay(from), '--to', isoDay(mid), '--chunk', '6h', '--json', '--no-progress'];
  const argsAll = ['backfill', '--from', isoDay(from), '--to', isoDay(to), '--chunk', '6h', '--json', '--no-progress'];
  await timed(r, async () => {
    const probe = await mkdtemp(join(tmpdir(), 'session-etl-tmpfs-probe-'));
    const mounted = tryMount(probe, '1m');
    if (mounted) execFileSync('umount', [probe], { stdio: 'ignore' });
    await rm(probe, { recursive: true, force: true });
    r.notes.push(
      mounted
        ? 'method: a size-limited tmpfs (mount -t tmpfs -o size=24m) filled to leave little room, so the real ENOSPC comes from the kernel'
        : 'method: ENOSPC injected with the test-only SESSION_ETL_FAULT hook (mounting a tmpfs was refused here)',
    );
    const plans: Array<{ leave?: number; fault?: string }> = mounted
      ? (o.leaveFree ?? [16 << 10, 128 << 10, 512 << 10, 1536 << 10]).map((leave) => ({ leave }))
      : [{ fault: 'enospc:mid-transaction:3' }, { fault: 'enospc:mid-parquet-rewrite:2' }];
    const where = new Map<string, number>();
    for (const plan of plans) {
      r.trials++;
      const mount = await mkdtemp(join(tmpdir(), 'session-etl-disk-'));
      let isMounted = false;
      try {
        if (plan.leave !== undefined) {
          isMounted = tryMount(mount, '24m');
          if (!isMounted) throw new Error('mount failed after the probe succeeded');
        }
        const dir = join(mount, 'data');
        const first = await startCli(argsA, cliEnv(emu, dir)).result;
        if (first.code !== 0) throw new Error(`the first backfill failed: ${excerpt(first)}`);
        const filler = join(mount, 'filler');
        if (plan.leave !== undefined) {
          const fs = await statfs(mount);
          await fill(filler, Math.max(0, fs.bavail * fs.bsize - plan.leave)).catch(() => {});
        }
        const watcher = watchParquet(dir);
        const full = await startCli(argsAll, cliEnv(emu, dir, plan.fault ? { SESSION_ETL_FAULT: plan.fault } : {})).result;
        const seen = await watcher.stop();
        const label = plan.leave !== undefined ? `${Math.round(plan.leave / 1024)} KiB left` : plan.fault!;
        if (plan.leave !== undefined && full.code === 0) {
          // Everything fitted in the room left: not a full-disk trial, but the data must still be exact.
          r.notes.push(`${label}: the run fitted (no ENOSPC)`);
          const fin = await checkFinal(dir, 'both', truthAll);
          r.rowsCompared += fin.compared;
          check(r, fin.problems.length === 0, `${label}: ${fin.problems.slice(0, 2).join('; ')}`);
          continue;
        }
        r.injected++;
        check(r, full.code === 1 && full.signal === null, `${label}: expected exit 1, got ${excerpt(full)}`);
        const errText = full.stderr.split('\n').filter((l) => /^error:|caused by/.test(l)).join(' | ');
        check(r, /disk is full|No space left|ENOSPC/i.test(errText), `${label}: the error does not say the disk is full: ${errText.slice(0, 300)}`);
        check(r, /committed|intact/.test(errText), `${label}: the error does not say what is kept: ${errText.slice(0, 300)}`);
        const at = /(committing window|rewriting Parquet partition|merging|compacting|writing|recording)[^:;]*/.exec(errText)?.[0] ?? errText.slice(0, 60);
        const key = at.replace(/ date=\S+| windows? [\d., ]+/g, '').trim();
        where.set(key, (where.get(key) ?? 0) + 1);
        check(r, seen.violations.length === 0, `${label}: the Parquet reader saw: ${seen.violations.slice(0, 2).join('; ')}`);
        // What was committed before is still readable and intact.
        let snap;
        try {
          snap = await readStore(dir, 'both');
        } catch (err) {
          check(r, false, `${label}: the store cannot be read after the failed run: ${(err as Error).message}`);
        }
        if (snap) {
          const inv = checkCrashInvariants(snap, 'both', emu);
          r.rowsCompared += inv.compared;
          check(r, inv.problems.length === 0, `${label}: state after the failed run: ${inv.problems.slice(0, 2).join('; ')}`);
          const ids = new Map(snap.rows.map((row) => [String(row.session_id), row]));
          const lost = [...truthA.keys()].filter((id) => !ids.has(id));
          r.rowsCompared += truthA.size;
          check(r, lost.length === 0, `${label}: ${lost.length} sessions of the first backfill lost`);
        }
        // Room again: the same command completes the data.
        await rm(filler, { force: true });
        const again = await startCli(argsAll, cliEnv(emu, dir)).result;
        check(r, again.code === 0, `${label}: the run after making room failed: ${excerpt(again)}`);
        const fin = await checkFinal(dir, 'both', truthAll);
        r.rowsCompared += fin.compared;
        check(r, fin.problems.length === 0, `${label}: after making room: ${fin.problems.slice(0, 2).join('; ')}`);
        log(`full disk (${label}): ${full.code === 1 ? 'failed clearly' : 'exit ' + full.code}; ${errText.slice(0, 160)}`);
      } finally {
        if (isMounted) {
          try {
            execFileSync('umount', [mount], { stdio: 'ignore' });
          } catch {
            execFileSync('umount', ['-l', mount], { stdio: 'ignore' });
          }
        }
        await rm(mount, { recursive: true, force: true });
      }
    }
    r.notes.push(`where the write failed: ${[...where].map(([k, v]) => `${k} (${v})`).join('; ')}`);
  });
  await emu.close();
  await temp.cleanup();
  return r;
}
