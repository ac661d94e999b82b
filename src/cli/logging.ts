/**
 * The CLI's logger: pino, JSON lines on stderr, pino-pretty on a terminal. Every byte goes through `redact()`
 * and escapeBidi, and out through `writeLines` (progress.ts), which keeps it apart from a progress bar.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import pretty from 'pino-pretty';
import type { Logger } from '../util/logger.js';
import { writeLines } from './progress.js';
import { redact } from '../util/redact.js';
import { escapeBidi } from '../util/terminal-text.js';

export function createCliLogger(level: string, stream: NodeJS.WriteStream = process.stderr): Logger {
  const sink = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      writeLines(stream, escapeBidi(redact(chunk.toString())));
      cb();
    },
  });
  const destination = stream.isTTY
    ? pretty({ destination: sink, colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', sync: true })
    : sink;
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, destination) as unknown as Logger;
}
