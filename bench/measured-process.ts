/**
 * What the bench's cases share: a row of the table, and a `session-etl` run as a real process with
 * its peak RSS and CPU time (rss-probe.ts preloaded into it).
 */
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One row of a bench table. */
export interface Row {
  section: string;
  measure: string;
  value: string;
  goal?: string;
  met?: boolean;
}

export interface MeasuredRun {
  code: number;
  stdout: string;
  stderr: string;
  wallMs: number;
  /** The process's peak resident set size (VmHWM). */
  maxRssBytes: number;
  /** User + system CPU time of all its threads. */
  cpuMs: number;
}

/** Runs `node --import <dist>/rss-probe.js <bin> ...args` with exactly `env`, and waits for its exit. */
export async function runMeasured(dist: string, bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<MeasuredRun> {
  const rssFile = join(tmpdir(), `bench-rss-${process.pid}-${randomBytes(6).toString('hex')}.json`);
  const t = performance.now();
  const child = spawn(process.execPath, ['--import', join(dist, 'rss-probe.js'), bin, ...args], {
    env: { ...env, BENCH_RSS_FILE: rssFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number>((res) => child.once('exit', (c) => res(c ?? -1)));
  const wallMs = performance.now() - t;
  const probe = JSON.parse(await readFile(rssFile, 'utf8')) as { maxRssKb: number; cpuMs: number };
  await rm(rssFile, { force: true });
  return { code, stdout, stderr, wallMs, maxRssBytes: probe.maxRssKb * 1024, cpuMs: probe.cpuMs };
}
