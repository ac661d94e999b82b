/**
 * The benchmark's emulator, in its own process so that serving costs the pipeline no CPU time of
 * its own process: `node dist/bench/emulator-process.js '<EmulatorOptions as JSON>'` prints
 * `{"url","apiKey"}` on one line once it listens; `stats` on stdin prints its statistics; it exits
 * when stdin closes (so it never outlives the benchmark).
 */
import { createInterface } from 'node:readline';
import { startEmulator } from '../src/emulator/index.js';

const emu = await startEmulator(JSON.parse(process.argv[2] ?? '{}'));
process.stdout.write(`${JSON.stringify({ url: emu.url, apiKey: emu.apiKey })}\n`);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() === 'stats') process.stdout.write(`${JSON.stringify(emu.stats())}\n`);
  if (line.trim() === 'reset') {
    emu.resetStats();
    process.stdout.write('{}\n');
  }
});
lines.on('close', () => void emu.close().finally(() => process.exit(0)));
