import type { Logger } from '../../src/util/logger.js';

/** A logger that keeps every line it is given, serialised, for assertions (e.g. that no secret leaks). */
export function captureLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const log = (level: string) => (obj: object, msg?: string) => {
    lines.push(JSON.stringify({ level, ...obj, msg }));
  };
  const logger: Logger & { lines: string[] } = {
    lines,
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    child: () => logger,
  };
  return logger;
}

/** A stream that keeps what is written to it (a command's stdout or stderr in-process, kept out of the test output). */
export function captureStream(): { stream: NodeJS.WritableStream; text(): string } {
  let text = '';
  return { stream: { write: (s: string | Uint8Array) => ((text += String(s)), true) } as unknown as NodeJS.WritableStream, text: () => text };
}

/** A sleep that records what it was asked to wait and returns at once, advancing a fake clock. */
export function fakeTime(startMs = Date.UTC(2026, 2, 1)) {
  let t = startMs;
  const sleeps: number[] = [];
  return {
    now: () => t,
    sleeps,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      t += ms;
    },
    advance(ms: number) {
      t += ms;
    },
  };
}

/** Every string a value holds, deeply, including error messages, causes and stacks. */
export function allText(value: unknown, seen = new Set<unknown>()): string {
  if (value == null) return '';
  if (typeof value !== 'object') return String(value);
  if (seen.has(value)) return '';
  seen.add(value);
  const parts: string[] = [];
  if (value instanceof Error) parts.push(value.message, value.stack ?? '', allText(value.cause, seen));
  for (const k of Object.getOwnPropertyNames(value)) {
    parts.push(k, allText((value as Record<string, unknown>)[k], seen));
  }
  return parts.join('\n');
}
