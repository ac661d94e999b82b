/**
 * Temporary files are created exclusively, never through a link, under names nobody can guess
 * (issue 28, MEDIUM 3): a user who can write the directory (node_exporter's textfile directory is
 * often shared) plants links at every name the earlier code used and at guesses of the new one;
 * the file they point to stays untouched, and the write succeeds (or fails saying why).
 */
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeMetricsAfter } from '../../src/monitoring/metrics-file.js';
import { readNotifyState, writeNotifyState } from '../../src/monitoring/notify-state.js';
import { writeFileAtomic } from '../../src/store/durable-fs.js';
import { TMP_FILE_NAME } from '../../src/store/layout.js';
import { writeStateSnapshot, type StateSnapshot } from '../../src/store/state-snapshot.js';
import { Readable } from 'node:stream';
import { FileTokenStore } from '../../src/auth/file-token-store.js';
import { refuseSharedDirectory, SharedDirectoryError, unguessable, writeNewFile, writeNewFileAt, writeNewStream } from '../../src/util/temp-file.js';

const PRECIOUS = 'a file of the service user that nobody may overwrite\n';
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'session-etl-temp-file-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

let n = 0;
/** A fresh directory, and a precious file outside it that links will point to. */
async function setup() {
  const dir = join(root, `case-${++n}`);
  await mkdir(dir);
  const target = join(root, `precious-${n}.txt`);
  await writeFile(target, PRECIOUS);
  const plant = (names: string[]) => Promise.all(names.map((name) => symlink(target, join(dir, name))));
  const untouched = async () => expect(await readFile(target, 'utf8')).toBe(PRECIOUS);
  return { dir, target, plant, untouched };
}

/** Names an attacker would try for the new scheme: the old shape with made-up suffixes. */
const guesses = (stem: string) => ['0000000000000000', 'ffffffffffffffff', unguessable()].map((g) => `.${stem}.${g}.tmp`);

describe('writeNewFile', () => {
  it('never writes through a link: a name that keeps colliding fails with EEXIST, the target untouched', async () => {
    const s = await setup();
    await s.plant(['fixed.tmp']);
    const err = await writeNewFile(() => join(s.dir, 'fixed.tmp'), 'x', { mode: 0o600 }).catch((e: unknown) => e);
    expect((err as NodeJS.ErrnoException).code).toBe('EEXIST');
    await s.untouched();
    expect((await lstat(join(s.dir, 'fixed.tmp'))).isSymbolicLink()).toBe(true);
  });

  it('draws another name when one is taken, and makes the file with exactly the mode asked', async () => {
    const s = await setup();
    await s.plant(['taken.tmp']);
    let calls = 0;
    const path = await writeNewFile((suffix) => join(s.dir, calls++ === 0 ? 'taken.tmp' : `new.${suffix}.tmp`), 'hello', { mode: 0o600, exactMode: true });
    expect(path).toMatch(/new\.[0-9a-f]{16}\.tmp$/);
    expect(await readFile(path, 'utf8')).toBe('hello');
    expect((await lstat(path)).mode & 0o777).toBe(0o600);
    await s.untouched();
  });
});

describe('writeNewFileAt (the files of fixed names: the lock\'s holder.json, the demo\'s marker)', () => {
  it('never writes through a link planted at the name: EEXIST, the target untouched, the link left as it was', async () => {
    const s = await setup();
    await s.plant(['holder.json', '.session-etl-demo']);
    for (const name of ['holder.json', '.session-etl-demo']) {
      const err = await writeNewFileAt(join(s.dir, name), '{"pid":1}', { mode: 0o644 }).catch((e: unknown) => e);
      expect((err as NodeJS.ErrnoException).code).toBe('EEXIST');
      expect((await lstat(join(s.dir, name))).isSymbolicLink()).toBe(true);
    }
    await s.untouched();
  });

  it('a dangling link (its target not yet made) is not followed either: nothing is created at the target', async () => {
    const s = await setup();
    const absent = join(root, `absent-${n}.txt`);
    await symlink(absent, join(s.dir, 'holder.json'));
    const err = await writeNewFileAt(join(s.dir, 'holder.json'), 'x', { mode: 0o644 }).catch((e: unknown) => e);
    expect((err as NodeJS.ErrnoException).code).toBe('EEXIST');
    await expect(lstat(absent)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('writes a new file with the mode asked when nothing is at the name', async () => {
    const s = await setup();
    await writeNewFileAt(join(s.dir, 'holder.json'), 'hello', { mode: 0o600, exactMode: true });
    expect(await readFile(join(s.dir, 'holder.json'), 'utf8')).toBe('hello');
    expect((await lstat(join(s.dir, 'holder.json'))).mode & 0o777).toBe(0o600);
  });
});

describe('every temporary file the project writes', () => {
  it('writeFileAtomic: links at guessed names are left alone; a link at the final name is replaced, not followed', async () => {
    const s = await setup();
    await s.plant([...guesses('out.txt'), 'out.txt']);
    await writeFileAtomic(join(s.dir, 'out.txt'), 'new content\n', { mode: 0o640 });
    await s.untouched();
    expect((await lstat(join(s.dir, 'out.txt'))).isFile()).toBe(true);
    expect(await readFile(join(s.dir, 'out.txt'), 'utf8')).toBe('new content\n');
    // Nothing left behind but the planted links and the file.
    expect((await readdir(s.dir)).filter((f) => !f.startsWith('.out.txt.')).sort()).toEqual(['out.txt']);
  });

  it('--metrics-file: the name the earlier code used (.<name>.<pid>.tmp) and guesses of the new one, all linked to a file: it stays untouched', async () => {
    const s = await setup();
    const file = join(s.dir, 'session_etl.prom');
    await s.plant([`.session_etl.prom.${process.pid}.tmp`, ...guesses('session_etl.prom')]);
    const dataDir = join(root, `data-${n}`);
    await writeMetricsAfter(file, 'export', dataDir, () => Promise.reject(new Error('the run failed'))).catch(() => {});
    await s.untouched();
    expect(await readFile(file, 'utf8')).toMatch(/session_etl_last_run_failed 1/);
  });

  it('notify-state.json: the earlier name (notify-state.json.<pid>.tmp) linked: untouched, and the state is written', async () => {
    const s = await setup();
    await s.plant([`notify-state.json.${process.pid}.tmp`, ...guesses('notify-state.json')]);
    const state = { failing: { runId: 'r1', command: 'export', since: '2026-03-05T02:15:00.000Z' }, lagExceeded: null };
    await writeNotifyState(s.dir, state);
    await s.untouched();
    expect(await readNotifyState(s.dir)).toEqual(state);
  });

  it('state.json: the earlier name in .tmp/ (state.json-<pid>) linked: untouched, and the snapshot is written', async () => {
    const s = await setup();
    const tmpDir = join(s.dir, '.tmp');
    await mkdir(tmpDir);
    await Promise.all([`state.json-${process.pid}`, ...guesses('state.json')].map((name) => symlink(s.target, join(tmpDir, name))));
    const snapshot = { version: 1 } as unknown as StateSnapshot;
    await writeStateSnapshot(s.dir, tmpDir, snapshot);
    await s.untouched();
    expect(JSON.parse(await readFile(join(s.dir, 'state.json'), 'utf8'))).toEqual(snapshot);
  });

  it('the names cleanup recognises as ours include the new ones (an unguessable end), and only those', () => {
    const h = unguessable();
    for (const name of [`.state.json.${h}.tmp`, `rows-000001767225600-42-3-${h}.ndjson`, `2026-01-01-42-7-${h}.parquet`, `.probe-42-${h}`, 'state.json-42', '2026-01-01-42-7.parquet']) {
      expect({ name, ours: TMP_FILE_NAME.test(name) }).toEqual({ name, ours: true });
    }
    for (const name of ['notes.txt', `.state.json.${h}.tmp.bak`, `2026-01-01-42-7-${h}x.parquet`, '.probe-42-zz']) {
      expect({ name, ours: TMP_FILE_NAME.test(name) }).toEqual({ name, ours: false });
    }
  });
});

describe('downloads and shared directories', () => {
  it('writeNewStream: a link at the name fails with EEXIST and its target is untouched; a new name gets the bytes', async () => {
    const s = await setup();
    await s.plant(['.state.json.part']);
    const err = await writeNewStream(join(s.dir, '.state.json.part'), Readable.from(['planted?']), 0o640).catch((e: unknown) => e);
    expect((err as NodeJS.ErrnoException).code).toBe('EEXIST');
    await s.untouched();
    await writeNewStream(join(s.dir, 'fresh.part'), Readable.from(['one ', 'two']), 0o640);
    expect(await readFile(join(s.dir, 'fresh.part'), 'utf8')).toBe('one two');
  });

  it('the token store writes through the one atomic write: a link at its name is replaced, not followed', async () => {
    const s = await setup();
    await s.plant(['tokens.json', `tokens.json.${process.pid}.0000000000000000.tmp`, ...guesses('tokens.json')]);
    await chmod(s.dir, 0o700);
    await new FileTokenStore(join(s.dir, 'tokens.json')).save({ accessToken: 'a', refreshToken: 'r', expiresAt: 1 } as never);
    await s.untouched();
    expect((await lstat(join(s.dir, 'tokens.json'))).isFile()).toBe(true);
    expect((await lstat(join(s.dir, 'tokens.json'))).mode & 0o777).toBe(0o600);
  });

  it('refuseSharedDirectory: o+w refused naming the directory and what to do; ours (g+w too) and a missing one pass', async () => {
    const s = await setup();
    await chmod(s.dir, 0o777);
    const err = await refuseSharedDirectory(s.dir, 'cache directory').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SharedDirectoryError);
    expect((err as Error).message).toBe(
      `the cache directory ${s.dir} can be written by every user (mode 777): another user could plant links there and have session-etl overwrite their targets; use a directory of your own (chmod o-w,g-w ${s.dir}, or another --data-dir)`,
    );
    await chmod(s.dir, 0o1777);
    await expect(refuseSharedDirectory(s.dir, 'cache directory')).rejects.toThrow(/mode 1777|mode 777/);
    await chmod(s.dir, 0o770);
    await expect(refuseSharedDirectory(s.dir, 'cache directory')).resolves.toBeUndefined();
    await expect(refuseSharedDirectory(join(s.dir, 'missing'), 'cache directory')).resolves.toBeUndefined();
  });
});
