/**
 * The benchmark's emulator, in its own process so that serving costs the pipeline no CPU time of
 * its own process: `node dist/bench/emulator-process.js '<EmulatorOptions as JSON>'` prints
 * `{"url","apiKey"}` on one line once it listens; `stats` on stdin prints its statistics,
 * `timeline` the answers per second since the first reporting request ({s, ok, refused} per
 * second: 200s and 429s) and the time from the first answer to the last (spanMs); it exits when stdin closes (so it never outlives the benchmark).
 */
import { createInterface } from 'node:readline';
import { startEmulator } from '../src/emulator/index.js';

const options = JSON.parse(process.argv[2] ?? '{}');
let first: number | undefined;
let last = 0;
const seconds: Array<{ ok: number; refused: number }> = [];
options.log = (line: string) => {
  const m = /^POST \S* (\d{3}|reset) /.exec(line);
  if (!m) return;
  const now = Date.now();
  first ??= now;
  last = now;
  const s = Math.floor((now - first) / 1000);
  while (seconds.length <= s) seconds.push({ ok: 0, refused: 0 });
  if (m[1] === '200') seconds[s]!.ok++;
  if (m[1] === '429') seconds[s]!.refused++;
};
const emu = await startEmulator(options);
process.stdout.write(`${JSON.stringify({ url: emu.url, apiKey: emu.apiKey })}\n`);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() === 'stats') process.stdout.write(`${JSON.stringify(emu.stats())}\n`);
  if (line.trim() === 'timeline') {
    process.stdout.write(`${JSON.stringify({ seconds: seconds.map((x, s) => ({ s, ...x })), spanMs: first === undefined ? 0 : last - first })}\n`);
  }
  if (line.trim() === 'reset') {
    emu.resetStats();
    seconds.length = 0;
    first = undefined;
    process.stdout.write('{}\n');
  }
});
lines.on('close', () => void emu.close().finally(() => process.exit(0)));
