/** Runs the built CLI (dist/) as a real child process. `npm test` builds before running the tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../src/util/package-root.js';

/** The repository root (where package.json is), from the sources or from dist/. */
export const REPO_ROOT = packageRoot();
export const BIN = join(REPO_ROOT, 'bin', 'session-etl.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/**
 * The environment every spawned command gets: PATH, HOME and TZ=UTC, and a fake clock when the
 * tests run under one (libfaketime: `test/dates.sh` runs the tests that depend on today's date as
 * if on other days), so that the command and the test agree on what day it is.
 */
export function baseEnv(): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC' };
  for (const k of ['LD_PRELOAD', 'FAKETIME', 'FAKETIME_DONT_FAKE_MONOTONIC']) if (process.env[k] !== undefined) env[k] = process.env[k];
  return env;
}

/** Starts `session-etl <args>` with only the given environment (plus baseEnv()). */
export function startCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd?: string,
): ChildProcess & { result: Promise<CliResult>; output(): string } {
  const t0 = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd ? { cwd } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const result = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, durationMs: Date.now() - t0 }));
  });
  return Object.assign(child, { result, output: () => stdout + stderr });
}

export function runCli(args: string[], env: Record<string, string | undefined> = {}, cwd?: string): Promise<CliResult> {
  return startCli(args, env, cwd).result;
}

/** Resolves when `check()` holds, polling. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
