/**
 * The progress bar and the log share a terminal: run the CLI on a real pseudo-terminal (util-linux
 * `script`), replay the bytes through a small terminal model, and read the screen a user is left
 * with: every log line whole on its own line, the summary on clean lines, no bar fragments.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { BIN, baseEnv, runCli } from '../helpers/cli.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { startCorruptingProxy } from '../reliability/corrupting-proxy.js';
import { renderScreen } from '../helpers/terminal-screen.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;
const TO = FROM + 3 * D;
const hasScript = spawnSync('script', ['--version']).status === 0;
const BAR = /[\u2588\u2591]|windows \|/;

const fx = useEmulator({ seed: 8, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 40 }, { prefix: 'session-etl-terminal-output-' });
const dirs: string[] = [];

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Runs `session-etl <args>` on a pseudo-terminal 200 columns wide; `onOutput` sees the raw bytes so far and may type into it. */
async function onTerminal(
  args: string[],
  onOutput: (raw: string, type: (keys: string) => void) => void = () => {},
  dir?: string,
): Promise<{ code: number | null; raw: string; screen: string[]; dataDir: string }> {
  const dataDir = dir ?? (await mkdtemp(join(tmpdir(), 'session-etl-tty-')));
  if (!dir) dirs.push(dataDir);
  const cmd = `stty cols 200 rows 50; exec ${[process.execPath, BIN, ...args].map(quote).join(' ')}`;
  const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
    env: {
      ...baseEnv(), TERM: 'xterm',
      REPORTING_URL: fx.emu.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dataDir,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let raw = '';
  child.stdout.on('data', (d: Buffer) => {
    raw += d.toString();
    onOutput(raw, (keys) => child.stdin.write(keys));
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, raw, screen: renderScreen(raw), dataDir };
}

/** The summary block: from its first line ("backfill <run id>: …") to the end. */
function summaryOf(screen: string[]): string[] {
  const start = screen.findIndex((l) => /^backfill backfill-\S+: /.test(l));
  expect(start, `no summary line on the screen:\n${screen.join('\n')}`).toBeGreaterThanOrEqual(0);
  return screen.slice(start).filter((l) => l !== '');
}

describe.skipIf(!hasScript)('progress bar and log lines on a terminal', () => {
  it('retry warnings print on their own lines above the bar; the summary starts on a clean line', async () => {
    fx.emu.setFaults({ serverErrorRate: 0.3 });
    const from = isoDay(FROM);
    const to = isoDay(TO);
    const r = await onTerminal(['backfill', '--from', from, '--to', to, '--chunk', '3h', '--concurrency', '1']);
    fx.emu.setFaults({});
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

  it("the bar's last frame shows the summary's counts: a backfill's windows and records, and a verify's (issue 42 #4)", async () => {
    const from = isoDay(FROM);
    const to = isoDay(TO);
    /** The counts of the last frame drawn before the bar was cleared. */
    const lastFrame = (raw: string) => [...raw.matchAll(/(\d+)\/(\d+) windows \| (\d+) records fetched/g)].map((m) => m.slice(1, 4).map(Number)).at(-1);
    const r = await onTerminal(['backfill', '--from', from, '--to', to, '--chunk', '3h', '--concurrency', '4']);
    expect(r.code, r.screen.join('\n')).toBe(0);
    const summary = summaryOf(r.screen).join('\n');
    expect(summary).toContain('  windows        24 of 24 done');
    // The summary's records line: "N fetched = W written + U unchanged (+ D duplicates across windows…)".
    const fetched = Number(/^ {2}records {8}(\d+) fetched(?: =|$)/m.exec(summary)?.[1]);
    expect(fetched).toBeGreaterThan(0);
    expect(lastFrame(r.raw)).toEqual([24, 24, fetched]);

    const v = await onTerminal(['verify', '--from', from, '--to', to, '--chunk', '3h', '--concurrency', '4'], undefined, r.dataDir);
    expect(v.code, v.screen.join('\n')).toBe(0);
    const vs = v.screen.slice(v.screen.findIndex((l) => /^verify verify-\S+: /.test(l))).join('\n');
    const vFetched = Number(/windows +24 of 24 fetched; (\d+) records fetched/.exec(vs)?.[1]);
    expect(vFetched).toBe(fetched);
    expect(lastFrame(v.raw)).toEqual([24, 24, fetched]);
    expect(v.screen.filter((l) => BAR.test(l))).toEqual([]);
  });

  it('Ctrl-C: the stopping warning and the interrupted summary are clean lines, no bar left', async () => {
    fx.emu.setFaults({ latencyMs: 150 });
    const from = isoDay(FROM);
    const to = isoDay(TO);
    let typed = false;
    const r = await onTerminal(['backfill', '--from', from, '--to', to, '--chunk', '1h', '--concurrency', '1'], (raw, type) => {
      if (!typed && /[1-9]\d*\/72 windows/.test(raw)) {
        typed = true;
        type('\x03');
      }
    });
    fx.emu.setFaults({});
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

/**
 * Issue 28 (LOW x2): what a hostile server's text becomes. Its error text was stored and printed at
 * full length (2 MB per failed run in state.json and the run log), and terminal control sequences
 * from the server or the data (title change, clear screen, OSC 8 hyperlinks) reached status, error
 * lines and `sessions --output table` raw; the webhook's text kept markdown links and mentions.
 */
describe("a hostile server's text", () => {
  // Retitles the terminal, clears it, and shows "click" as a hyperlink to evil.example.
  const CONTROL = '\u001b]0;pwned\u0007\u001b[2J\u001b]8;;http://evil.example/\u001b\\click\u001b]8;;\u001b\\\u009b31m';
  const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

  async function dataDir(): Promise<string> {
    const d = await mkdtemp(join(tmpdir(), 'session-etl-hostile-'));
    dirs.push(d);
    return d;
  }

  /**
   * A data directory with one day stored, then a backfill of the next day against a server answering
   * every window with GraphQL errors holding `message`; notifications go to a receiver.
   */
  async function failWith(message: string) {
    let hostile = false;
    const proxy = await startCorruptingProxy(fx.emu.url, {
      respond: (req) => (hostile && req.window ? { status: 200, body: JSON.stringify({ errors: [{ message }], data: null }) } : undefined),
    });
    const hook = await startWebhookReceiver<{ text: string; error: string }>('/hooks/hostile-token-1234');
    try {
      const dir = await dataDir();
      const env = { REPORTING_URL: proxy.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dir, SESSION_ETL_NOTIFY_URL: hook.url };
      // A first day stored, so that status has a data directory to show; then the server turns hostile.
      expect((await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--log-level', 'error'], env)).code).toBe(0);
      hostile = true;
      const run = await runCli(['backfill', '--from', isoDay(FROM + D), '--to', isoDay(FROM + 2 * D), '--chunk', '1d', '--min-chunk', '1d', '--log-level', 'info'], env);
      expect(run.code).toBe(1);
      const json = await runCli(['status', '--json'], env);
      const lastRun = (JSON.parse(json.stdout) as { lastRuns: Array<{ outcome: string; error: string }> }).lastRuns[0]!;
      expect(lastRun.outcome).toBe('failed');
      const status = await runCli(['status'], env);
      expect(status.code).toBe(0);
      const check = await runCli(['status', '--check'], env);
      expect(check.code).toBe(1);
      expect(hook.posts).toHaveLength(1);
      return { dir, run, lastRun, status, check, post: hook.posts[0]!.json };
    } finally {
      await proxy.close();
      await hook.close();
    }
  }

  it('a 2 MB error text is clipped where it is recorded and shown: run history, state.json, error lines, the webhook', async () => {
    const { dir, run, lastRun, post } = await failWith(`quota exceeded ${'x'.repeat(2_000_000)} (end)`);
    const clipped = /\[clipped: 2,0\d\d,\d{3} characters in all\]/;
    expect(run.stderr.length).toBeLessThan(40_000);
    expect(run.stderr).toMatch(clipped);
    expect(run.stderr).toContain('Lower --min-chunk'); // the advice at the end of the message is kept
    expect(lastRun.error.length).toBeLessThan(4_100);
    expect(lastRun.error).toMatch(/last server message: the reporting endpoint answered with GraphQL errors: quota exceeded x+ … \[clipped: 2,0\d\d,\d{3} characters in all\] … x+ \(end\)\. Lower --min-chunk/);
    expect((await stat(join(dir, 'state.json'))).size).toBeLessThan(40_000);
    expect(post.error.length).toBeLessThan(2_200);
    expect(post.error).toMatch(/\[clipped: /);
  });

  it('escape sequences, markdown links and mentions: shown as U+FFFD in status, status --check and error lines; neither link nor mention in the webhook text', async () => {
    const { dir, run, lastRun, status, check, post } = await failWith(`${CONTROL} @channel @here [the docs](http://evil.example/login) quota exceeded`);
    expect(run.stderr).not.toMatch(RAW_CONTROL);
    expect(run.stderr).toContain('GraphQL errors: \ufffd]0;pwned\ufffd\ufffd[2J');
    expect(lastRun.error).not.toMatch(RAW_CONTROL);
    expect(await readFile(join(dir, 'state.json'), 'utf8')).not.toContain('\\u001b');
    expect(status.stdout).not.toMatch(RAW_CONTROL);
    expect(status.stdout).toMatch(/error: .*GraphQL errors: \ufffd\]0;pwned\ufffd\ufffd\[2J/);
    expect(check.stdout).toMatch(/^UNHEALTHY: last run .* failed: .*GraphQL errors: \ufffd\]0;pwned/m);
    expect(check.stdout + check.stderr).not.toMatch(RAW_CONTROL);
    expect(post.text).not.toMatch(RAW_CONTROL);
    expect(post.text).not.toContain('](');
    expect(post.text).toContain('@\u200bchannel @\u200bhere [the docs] (http://evil.example/login)');
  });

  it('sessions --output table: control sequences in the records are shown as U+FFFD, never sent to the terminal', async () => {
    const proxy = await startCorruptingProxy(fx.emu.url, {
      rewrite: (records) =>
        records.map((r) => ({ ...r, externalFields: { ...(r.externalFields as object), customerName: `Evil${CONTROL} Corp`, notes: 'line one\r\u001b[1Aline two' } })),
    });
    try {
      const dir = await dataDir();
      const env = { REPORTING_URL: proxy.url, REPORTING_API_KEY: fx.emu.apiKey, SESSION_ETL_DATA_DIR: dir };
      const run = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + D), '--chunk', '1d', '--log-level', 'error'], env);
      expect(run.code, run.stderr).toBe(0);
      const table = await runCli(['sessions', '--output', 'table', '--attribute-names', 'id,externalFields.customerName,externalFields.notes', '--page-size', '5'], env);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).not.toMatch(RAW_CONTROL);
      expect(table.stdout).toContain('Evil\ufffd]0;pwned\ufffd\ufffd[2J');
      expect(table.stdout).toContain('line one \ufffd[1Aline two');
    } finally {
      await proxy.close();
    }
  });
});
