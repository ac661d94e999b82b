/** `session-etl emulator`: the emulated vendor interface on loopback until SIGINT or SIGTERM. */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import type { EmulatorAccount, EmulatorFaults, EmulatorOptions } from '../../emulator/index.js';
import { checkAccounts, emulatorAccounts } from '../../emulator/accounts.js';
import { parseSchedule } from '../../emulator/faults.js';
import { ARG_TYPES, DRAWN_FAULT_KINDS, WINDOW_RULES } from '../../emulator/options.js';
import { parseInstant } from '../../time/windows.js';
import { collect } from '../account-options.js';
import { UsageError } from '../usage-error.js';

/** The flags as commander gives them: strings (those with a default always set), switches and repeatable lists. */
export type EmulatorFlags = Record<'host' | 'port' | 'seed' | 'sessionsPerDay' | 'windowRule' | 'argTypes', string> &
  Partial<Record<
    'apiKey' | 'from' | 'to' | 'loneSurrogateRate' | 'now' | 'latencyMs' | 'rateLimitRps' | 'serverErrorRate' | 'resetRate' |
    'truncateRate' | 'partialErrorRate' | 'maxResults' | 'maxSpanSeconds' | 'truncateResultsTo' | 'faultRate' | 'faultKinds' |
    'rateLimitSchedule' | 'sharedQuotaSchedule' | 'concurrencyLimit' | 'rateLimitHeaders' | 'retryAfterFormat' | 'releaseAt' |
    'releaseAfterRequests' | 'amendAt' | 'amendAfterRequests' | 'accounts' | 'accountsFile',
    string
  >> & { longNotes?: boolean; logRequests?: boolean; holdBack?: string[]; amend?: string[] };

export function register(program: Command): void {
  program
    .command('emulator')
    .description('Run the reporting endpoint emulator (seeded sessions, optional faults) on loopback until Ctrl-C')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0: any free port)', '0')
    .option('--api-key <key>', 'the API key to accept (default: emulator-reporting-key)')
    .option('--seed <n>', 'data and fault seed', '1')
    .option('--from <time>', 'first instant with data: 2026-01-01, ISO datetime with offset, or epoch seconds (default: 90 days ago)')
    .option('--to <time>', 'end of data, exclusive (default: data runs up to now)')
    .option('--sessions-per-day <n>', 'average sessions per day over a week', '200')
    .option('--long-notes', 'notes of 1–2 KB with escapes, control characters, non-ASCII and emoji instead of short ones')
    .option('--lone-surrogate-rate <p>', 'with --long-notes: probability (0..1) that a note ends with a lone UTF-16 surrogate escape')
    .option('--now <time>', "pin the emulator's clock at this instant (default: the wall clock)")
    .option('--window-rule <rule>', `which sessions a window returns: ${WINDOW_RULES.join(', ')}`, 'closed')
    .option('--arg-types <type>', `how the schema declares sessions(start, end): ${ARG_TYPES.join(', ')}`, 'Int!')
    .option('--latency-ms <n>', 'delay before every answer')
    .option('--rate-limit-rps <n>', 'requests per second before answering 429 with Retry-After')
    .option('--server-error-rate <p>', 'probability (0..1) of HTTP 500/502/503')
    .option('--reset-rate <p>', 'probability (0..1) of a connection reset')
    .option('--truncate-rate <p>', 'probability (0..1) of a 200 with a body cut in half')
    .option('--partial-error-rate <p>', 'probability (0..1) of half the records plus an error')
    .option('--max-results <n>', 'refuse windows with more records (GraphQL error)')
    .option('--max-span-seconds <n>', 'refuse windows longer than this (GraphQL error)')
    .option('--truncate-results-to <n>', 'silently return only the first N records of a window')
    .option('--fault-rate <p>', 'probability (0..1) of one fault drawn among --fault-kinds')
    .option('--fault-kinds <list>', `kinds --fault-rate draws from, comma-separated: ${DRAWN_FAULT_KINDS.join(', ')} (default: all; rateLimited alone: stray 429s)`)
    .option('--rate-limit-schedule <list>', 'the quota changes over time: SECONDS:RPS pairs from the first request, e.g. 0:10,30:4,60:10')
    .option('--shared-quota-schedule <list>', "another client's requests per second taken from the quota, SECONDS:RPS pairs, e.g. 0:0,30:3,60:8,90:5")
    .option('--concurrency-limit <n>', 'answer 429 to a request that arrives while this many are in flight')
    .option('--rate-limit-headers <kind>', 'send rate-limit headers with every answer while a quota is set: ietf (RateLimit-*) or x (X-RateLimit-*)')
    .option('--retry-after-format <format>', 'how 429 answers state Retry-After: seconds or http-date', 'seconds')
    .option('--accounts <n>', 'serve N accounts (acct-000, acct-001, …), each with its own key, data and quota; the keys are printed at start')
    .option('--accounts-file <file>', 'serve the accounts listed in this JSON file: [{ name, apiKey, seed?, sessionsPerDay?, from?, to?, rateLimitRps?, latencyMs?, faults?, revoked? }]')
    .option('--hold-back <day:share>', 'late data: hold back this share of the day\'s sessions (e.g. 2026-03-04:0.8) until released (repeatable)', collect)
    .option('--release-at <time>', "with --hold-back: release them once the emulator's clock reaches this instant")
    .option('--release-after-requests <n>', 'with --hold-back: release them after this many reporting requests')
    .option('--amend <day:count>', "amended data: change the notes of the day's first N sessions (e.g. 2026-03-04:5) (repeatable)", collect)
    .option('--amend-at <time>', "with --amend: from when on the emulator's clock (default: at once)")
    .option('--amend-after-requests <n>', 'with --amend: only after this many reporting requests')
    .option('--log-requests', 'print one line per request to stderr')
    .action(async (flags: EmulatorFlags) => {
      await runEmulator(flags, { stdout: process.stdout, stderr: process.stderr, until: untilSignal });
    });
}

export interface EmulatorCommandIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Called once the emulator runs; resolves when it should stop (the command: at SIGINT or SIGTERM). */
  until: () => Promise<unknown>;
}

/** Starts the emulator, prints the one line naming its URL and key, and closes it when `until` resolves. */
export async function runEmulator(flags: EmulatorFlags, io: EmulatorCommandIo): Promise<void> {
  const options = emulatorOptionsFromFlags(flags);
  if (flags.logRequests) options.log = (line) => io.stderr.write(`${line}\n`);
  const { startEmulator } = await import('../../emulator/index.js');
  const emulator = await startEmulator(options).catch((err: unknown) => {
    // The checks the flags cannot make alone, and a port that cannot be had, are settings to change: usage errors.
    const code = (err as NodeJS.ErrnoException | null)?.code;
    if (code === 'EADDRINUSE') throw new UsageError(`port ${options.port} is in use (--port): choose another or 0 (any free port)`, { cause: err });
    if (code === 'EACCES') throw new UsageError(`port ${options.port} cannot be opened by this user (--port): choose one above 1023, or 0 (any free port)`, { cause: err });
    if (code === 'EADDRNOTAVAIL') throw new UsageError(`${JSON.stringify(options.host)} is not an address of this machine (--host): use 127.0.0.1`, { cause: err });
    throw err instanceof RangeError ? new UsageError(err.message, { cause: err }) : err;
  });
  try {
    if (emulator.accounts.length === 0) {
      io.stdout.write(`reporting endpoint: ${emulator.url}  api key: ${emulator.apiKey}\n`);
    } else {
      io.stdout.write(`reporting endpoint: ${emulator.url}  accounts: ${emulator.accounts.length}\n`);
      for (const a of emulator.accounts) io.stdout.write(`account: ${a.name}  api key: ${a.apiKey}${a.revoked ? '  (revoked)' : ''}\n`);
    }
    await io.until();
  } finally {
    await emulator.close();
  }
}

/** Checks every flag and builds the emulator options; a bad value throws a UsageError naming the flag. */
export function emulatorOptionsFromFlags(flags: EmulatorFlags): EmulatorOptions {
  const options: EmulatorOptions = {
    host: flags.host,
    port: integer('--port', flags.port, 0, 65_535),
    seed: integer('--seed', flags.seed, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    sessionsPerDay: number('--sessions-per-day', flags.sessionsPerDay, 0, 1_000_000),
    windowRule: oneOf('--window-rule', flags.windowRule, WINDOW_RULES),
    argTypes: oneOf('--arg-types', flags.argTypes, ARG_TYPES),
  };
  if (flags.apiKey !== undefined) {
    if (flags.apiKey.trim() === '') throw new UsageError('--api-key must not be empty');
    options.apiKey = flags.apiKey;
  }
  const accounts = accountsOf(flags, options.seed as number);
  if (accounts) options.accounts = accounts;
  if (flags.loneSurrogateRate !== undefined && !flags.longNotes) throw new UsageError('--lone-surrogate-rate needs --long-notes');
  if (flags.longNotes) {
    options.longNotes = flags.loneSurrogateRate === undefined ? true : { loneSurrogateRate: number('--lone-surrogate-rate', flags.loneSurrogateRate, 0, 1) };
  }
  if (flags.from !== undefined) options.from = instant('--from', flags.from);
  if (flags.to !== undefined) options.to = instant('--to', flags.to);
  if (flags.now !== undefined) options.now = instant('--now', flags.now);
  if (options.from !== undefined && options.to !== undefined && options.to <= options.from) {
    throw new UsageError('--to must lie after --from');
  }

  const faults: EmulatorFaults = {};
  const set = <K extends keyof EmulatorFaults>(key: K, value: EmulatorFaults[K] | undefined): void => {
    if (value !== undefined) faults[key] = value;
  };
  const optional = <T>(text: string | undefined, parse: (t: string) => T): T | undefined =>
    text === undefined ? undefined : parse(text);
  set('latencyMs', optional(flags.latencyMs, (t) => number('--latency-ms', t, 0, 600_000)));
  set('rateLimitRps', optional(flags.rateLimitRps, (t) => number('--rate-limit-rps', t, Number.MIN_VALUE, 1_000_000)));
  set('serverErrorRate', optional(flags.serverErrorRate, (t) => number('--server-error-rate', t, 0, 1)));
  set('resetRate', optional(flags.resetRate, (t) => number('--reset-rate', t, 0, 1)));
  set('truncateRate', optional(flags.truncateRate, (t) => number('--truncate-rate', t, 0, 1)));
  set('partialErrorRate', optional(flags.partialErrorRate, (t) => number('--partial-error-rate', t, 0, 1)));
  set('maxResults', optional(flags.maxResults, (t) => integer('--max-results', t, 0, Number.MAX_SAFE_INTEGER)));
  set('maxSpanSeconds', optional(flags.maxSpanSeconds, (t) => integer('--max-span-seconds', t, 0, Number.MAX_SAFE_INTEGER)));
  set('truncateResultsTo', optional(flags.truncateResultsTo, (t) => integer('--truncate-results-to', t, 0, Number.MAX_SAFE_INTEGER)));
  set('faultRate', optional(flags.faultRate, (t) => number('--fault-rate', t, 0, 1)));
  set('faultKinds', optional(flags.faultKinds, (t) => t.split(',').map((k) => oneOf('--fault-kinds', k.trim(), DRAWN_FAULT_KINDS))));
  set('rateLimitSchedule', optional(flags.rateLimitSchedule, (t) => schedule('--rate-limit-schedule', t, { zeroAllowed: false })));
  set('sharedQuotaSchedule', optional(flags.sharedQuotaSchedule, (t) => schedule('--shared-quota-schedule', t, { zeroAllowed: true })));
  set('concurrencyLimit', optional(flags.concurrencyLimit, (t) => integer('--concurrency-limit', t, 1, 1_000_000)));
  set('rateLimitHeaders', optional(flags.rateLimitHeaders, (t) => oneOf('--rate-limit-headers', t, ['ietf', 'x'] as const)));
  if (flags.retryAfterFormat !== undefined && flags.retryAfterFormat !== 'seconds') {
    set('retryAfterFormat', oneOf('--retry-after-format', flags.retryAfterFormat, ['seconds', 'http-date'] as const));
  }
  Object.assign(faults, lateDataOf(flags));
  if (faults.sharedQuotaSchedule && faults.rateLimitRps === undefined && !faults.rateLimitSchedule) {
    throw new UsageError('--shared-quota-schedule needs a quota to share: add --rate-limit-rps or --rate-limit-schedule');
  }
  if (Object.keys(faults).length > 0) options.faults = faults;
  return options;
}

/** --hold-back and --amend with their release and start (docs/emulator.md, "Late and amended data"). */
function lateDataOf(flags: EmulatorFlags): Pick<EmulatorFaults, 'holdBack' | 'amend'> {
  const out: Pick<EmulatorFaults, 'holdBack' | 'amend'> = {};
  const pair = (flag: string, text: string): [string, string] => {
    const m = /^(\d{4}-\d{2}-\d{2}):(.+)$/.exec(text.trim());
    if (!m || Number.isNaN(Date.parse(`${m[1]}T00:00:00Z`))) throw new UsageError(`${flag} takes DAY:VALUE with DAY as YYYY-MM-DD (e.g. 2026-03-04:0.8); got ${JSON.stringify(text)}`);
    return [m[1]!, m[2]!];
  };
  if (!flags.holdBack?.length && (flags.releaseAt !== undefined || flags.releaseAfterRequests !== undefined)) {
    throw new UsageError(`${flags.releaseAt !== undefined ? '--release-at' : '--release-after-requests'} goes with --hold-back`);
  }
  if (!flags.amend?.length && (flags.amendAt !== undefined || flags.amendAfterRequests !== undefined)) {
    throw new UsageError(`${flags.amendAt !== undefined ? '--amend-at' : '--amend-after-requests'} goes with --amend`);
  }
  if (flags.holdBack?.length) {
    const untilNow = flags.releaseAt !== undefined ? instant('--release-at', flags.releaseAt) : undefined;
    const untilRequests = flags.releaseAfterRequests !== undefined ? integer('--release-after-requests', flags.releaseAfterRequests, 0, Number.MAX_SAFE_INTEGER) : undefined;
    out.holdBack = flags.holdBack.map((h) => {
      const [day, share] = pair('--hold-back', h);
      const fraction = share.trim() === '' ? NaN : Number(share);
      if (!(fraction > 0 && fraction <= 1)) throw new UsageError(`--hold-back: the share of the day held back must be a number above 0 and up to 1; got ${JSON.stringify(share)}`);
      return { day, fraction, ...(untilNow !== undefined ? { untilNow } : {}), ...(untilRequests !== undefined ? { untilRequests } : {}) };
    });
  }
  if (flags.amend?.length) {
    const fromNow = flags.amendAt !== undefined ? instant('--amend-at', flags.amendAt) : undefined;
    const fromRequests = flags.amendAfterRequests !== undefined ? integer('--amend-after-requests', flags.amendAfterRequests, 0, Number.MAX_SAFE_INTEGER) : undefined;
    out.amend = flags.amend.map((a) => {
      const [day, n] = pair('--amend', a);
      return { day, count: integer('--amend (count)', n, 1, 1_000_000), ...(fromNow !== undefined ? { fromNow } : {}), ...(fromRequests !== undefined ? { fromRequests } : {}) };
    });
  }
  return out;
}

/** The accounts of --accounts N or --accounts-file F (not both, and not with --api-key), or undefined. */
function accountsOf(flags: EmulatorFlags, seed: number): EmulatorAccount[] | undefined {
  if (flags.accounts === undefined && flags.accountsFile === undefined) return undefined;
  if (flags.accounts !== undefined && flags.accountsFile !== undefined) throw new UsageError('--accounts and --accounts-file cannot be combined: give one of them');
  if (flags.apiKey !== undefined) {
    throw new UsageError(`--api-key cannot be combined with ${flags.accounts !== undefined ? '--accounts' : '--accounts-file'}: each account has its own key`);
  }
  if (flags.accounts !== undefined) return emulatorAccounts(integer('--accounts', flags.accounts, 1, 100_000), seed);
  const file = flags.accountsFile as string;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // JSON.parse's message may quote the text, and the text holds keys: say only where it broke.
    const at = /position (\d+)/.exec(e.message)?.[1];
    const why = e.code ? `cannot be read (${e.code})` : `is not valid JSON${at === undefined ? '' : ` (at character ${at})`}`;
    throw new UsageError(`--accounts-file ${file} ${why}; give a JSON list of { name, apiKey, … } or { "accounts": [ … ] }`, { cause: err });
  }
  const list = value && typeof value === 'object' && !Array.isArray(value) ? (value as { accounts?: unknown }).accounts : value;
  try {
    checkAccounts(list);
  } catch (err) {
    throw new UsageError(`--accounts-file ${file}: ${(err as Error).message}`, { cause: err });
  }
  return list;
}

function schedule(flag: string, text: string, { zeroAllowed }: { zeroAllowed: boolean }): Array<{ atSeconds: number; rps: number }> {
  let s: Array<{ atSeconds: number; rps: number }>;
  try {
    s = parseSchedule(text);
  } catch (err) {
    throw new UsageError(`${flag}: ${(err as Error).message}`, { cause: err });
  }
  s.forEach((e, i) => {
    if (i > 0 && e.atSeconds <= (s[i - 1] as { atSeconds: number }).atSeconds) throw new UsageError(`${flag}: the times must rise; got ${JSON.stringify(text)}`);
    if (!zeroAllowed && e.rps <= 0) throw new UsageError(`${flag}: every rate must be above 0; got ${JSON.stringify(text)}`);
  });
  return s;
}

function number(flag: string, text: string, min: number, max: number): number {
  const n = text.trim() === '' ? NaN : Number(text);
  if (!Number.isFinite(n) || n < min || n > max) {
    const range = min === Number.MIN_VALUE ? `a number greater than 0` : `a number from ${min} to ${max}`;
    throw new UsageError(`${flag} must be ${range}; got ${JSON.stringify(text)}`);
  }
  return n;
}

function integer(flag: string, text: string, min: number, max: number): number {
  const n = /^\s*-?\d+\s*$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range =
      min === Number.MIN_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER
        ? 'an integer (a whole number such as 1 or 42)'
        : max === Number.MAX_SAFE_INTEGER ? `a whole number of at least ${min}` : `a whole number from ${min} to ${max}`;
    throw new UsageError(`${flag} must be ${range}; got ${JSON.stringify(text)}`);
  }
  return n;
}

function oneOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text)) {
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}; got ${JSON.stringify(text)}`);
  }
  return text as T;
}

function instant(flag: string, text: string): number {
  try {
    return parseInstant(text, flag);
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
}

/** Resolves at the first SIGINT or SIGTERM (and stops listening for the other), saying so on stderr. */
function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const done = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      process.stderr.write(`emulator stopping (${signal})\n`);
      resolve();
    };
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}
