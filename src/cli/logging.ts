/**
 * The CLI's logger: pino, JSON lines on stderr when stderr is not a terminal, readable lines on a
 * terminal (pino-pretty). Every byte goes through `redact()` on its way out, so no registered
 * secret can reach a log. With a progress bar on the terminal, lines go through its `writeLines`
 * (given as `out`), which keeps the bar and the log lines apart.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import pretty from 'pino-pretty';
import type { Logger } from '../util/logger.js';
import { redact } from '../util/redact.js';

export function createCliLogger(
  level: string,
  stream: NodeJS.WriteStream = process.stderr,
  out?: { writeLines(text: string): void },
): Logger {
  const sink = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      if (!out) return void stream.write(redact(chunk.toString()), cb);
      out.writeLines(redact(chunk.toString()));
      cb();
    },
  });
  const destination = stream.isTTY
    ? pretty({ destination: sink, colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', sync: true })
    : sink;
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, destination) as unknown as Logger;
}
