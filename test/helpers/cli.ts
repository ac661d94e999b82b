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

/** Starts `session-etl <args>` with only the given environment (plus PATH, HOME and TZ=UTC). */
export function startCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd?: string,
): ChildProcess & { result: Promise<CliResult>; output(): string } {
  const t0 = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', ...env },
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
