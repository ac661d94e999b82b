/**
 * The progress bar and the log share a terminal: run the CLI on a real pseudo-terminal (util-linux
 * `script`), replay the bytes through a small terminal model, and read the screen a user is left
 * with: every log line whole on its own line, the summary on clean lines, no bar fragments.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { BIN, baseEnv } from '../helpers/cli.js';
import { renderScreen } from '../helpers/terminal-screen.js';

const D = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;
const TO = FROM + 3 * D;
const hasScript = spawnSync('script', ['--version']).status === 0;
const BAR = /[\u2588\u2591]|windows \|/;

let emu: Emulator;
const dirs: string[] = [];

beforeAll(async () => {
  emu = await startEmulator({ seed: 8, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 });
});
afterAll(async () => {
  await emu.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Runs `session-etl <args>` on a pseudo-terminal 200 columns wide; `onOutput` sees the raw bytes so far and may type into it. */
async function onTerminal(
  args: string[],
  onOutput: (raw: string, type: (keys: string) => void) => void = () => {},
): Promise<{ code: number | null; raw: string; screen: string[] }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'session-etl-tty-'));
  dirs.push(dataDir);
  const cmd = `stty cols 200 rows 50; exec ${[process.execPath, BIN, ...args].map(quote).join(' ')}`;
  const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
    env: {
      ...baseEnv(), TERM: 'xterm',
      REPORTING_URL: emu.url, REPORTING_API_KEY: emu.apiKey, SESSION_ETL_DATA_DIR: dataDir,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let raw = '';
  child.stdout.on('data', (d: Buffer) => {
    raw += d.toString();
    onOutput(raw, (keys) => child.stdin.write(keys));
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, raw, screen: renderScreen(raw) };
}

/** The summary block: from its first line ("backfill <run id>: …") to the end. */
function summaryOf(screen: string[]): string[] {
  const start = screen.findIndex((l) => /^backfill backfill-\S+: /.test(l));
  expect(start, `no summary line on the screen:\n${screen.join('\n')}`).toBeGreaterThanOrEqual(0);
  return screen.slice(start).filter((l) => l !== '');
}

describe.skipIf(!hasScript)('progress bar and log lines on a terminal', () => {
  it('retry warnings print on their own lines above the bar; the summary starts on a clean line', async () => {
    emu.setFaults({ serverErrorRate: 0.3 });
    const from = new Date(FROM * 1000).toISOString().slice(0, 10);
    const to = new Date(TO * 1000).toISOString().slice(0, 10);
    const r = await onTerminal(['backfill', '--from', from, '--to', to, '--chunk', '3h', '--concurrency', '1']);
    emu.setFaults({});
    expect(r.code, r.screen.join('\n')).toBe(0);
    expect(r.raw).toMatch(BAR); // the bar was drawn while the run went on
    const summary = summaryOf(r.screen);
    expect(summary[0]).toMatch(/: succeeded$/);
    expect(summary).toContainEqual('  windows        24 of 24 done');
    const retries = Number(/requests\s+\d+ \((\d+) retries/.exec(summary.join('\n'))?.[1]);
    expect(retries).toBeGreaterThan(0);
    // Every retry warning is a whole line of its own, none lost under the bar or the summary.
    const warnings = r.screen.filter((l) => l.includes('retrying a request'));
    expect(warnings).toHaveLength(retries);
    for (const w of warnings) expect(w).toMatch(/^\[\d\d:\d\d:\d\d(\.\d+)?\] WARN.*: retrying a request$/);
    // The bar is gone at the end: nothing of it is left on any line.
    expect(r.screen.filter((l) => BAR.test(l))).toEqual([]);
  });

  it('Ctrl-C: the stopping warning and the interrupted summary are clean lines, no bar left', async () => {
    emu.setFaults({ latencyMs: 150 });
    const from = new Date(FROM * 1000).toISOString().slice(0, 10);
    const to = new Date(TO * 1000).toISOString().slice(0, 10);
    let typed = false;
    const r = await onTerminal(['backfill', '--from', from, '--to', to, '--chunk', '1h', '--concurrency', '1'], (raw, type) => {
      if (!typed && /[1-9]\d*\/72 windows/.test(raw)) {
        typed = true;
        type('\x03');
      }
    });
    emu.setFaults({});
    expect(typed).toBe(true);
    expect(r.code, r.screen.join('\n')).toBe(130);
    const stopping = r.screen.filter((l) => l.includes('stopping: no new windows'));
    expect(stopping).toHaveLength(1);
    expect(stopping[0]).toMatch(/^\[\d\d:\d\d:\d\d(\.\d+)?\] WARN.*: stopping: no new windows/);
    const summary = summaryOf(r.screen);
    expect(summary[0]).toMatch(/: interrupted$/);
    expect(summary[2]).toMatch(/^ {2}windows {8}\d+ of 72 done, \d+ not started$/);
    expect(r.screen.filter((l) => BAR.test(l))).toEqual([]);
  });
});
