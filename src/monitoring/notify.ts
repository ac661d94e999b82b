/**
 * Run notifications (`notifyUrl`): a JSON POST when a run fails (`run_failed`), when a run succeeds
 * after a failure (`run_recovered`), and when an export finds the lag beyond `maxLag` for the first
 * time since it was last under it (`lag_exceeded`). The payload's `text` is a readable one-liner,
 * so a Slack or Teams incoming webhook shows it as it is.
 *
 * Delivery never changes a run's outcome: 3 attempts (1 s, then 2 s apart), each given at most
 * 5 s, the whole step at most 15 s; redirects are not followed; what cannot be delivered is logged
 * (receiver as scheme and host only: the URL's path often is the webhook's secret).
 */
import { hostname } from 'node:os';
import type { RunSummary } from '../pipeline/run.js';
import type { FetchLike } from '../reporting/transport.js';
import { clipText, MAX_ERROR_CHARS } from '../util/clip-text.js';
import { describeNetworkError } from '../util/describe-network-error.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { oneLine } from '../util/terminal-text.js';
import { redact, redactDeep } from '../util/redact.js';
import { realSleep, type Sleep } from '../util/sleep.js';
import { receiverOf, registerNotifyUrlSecret } from '../util/notify-url.js';
import { readNotifyState, writeNotifyState, type NotifyState } from './notify-state.js';

export type NotifyEvent = 'run_failed' | 'run_recovered' | 'lag_exceeded';

/** How a run ended, as the CLI or the scheduler saw it. */
export interface RunEnd {
  /** The CLI command: export, backfill or schedule. */
  command: string;
  /** The scheduled job's name (schedule only). */
  job?: string;
  dataDir: string;
  /** ms since the epoch. */
  startedMs: number;
  endedMs: number;
  /** The exit code the run ends with (a scheduled run: the one `export` would have). */
  exitCode: number;
  summary?: RunSummary;
  error?: unknown;
}

/** A RunEnd from what the caller saw: a failure's own summary (RunFailedError carries one) is used when no other is given. */
export function runEndOf(e: Omit<RunEnd, 'summary' | 'error'> & { summary?: RunSummary | undefined; error?: unknown }): RunEnd {
  const { summary, error, ...rest } = e;
  const s = summary ?? (error as { summary?: RunSummary } | undefined)?.summary;
  return { ...rest, ...(s ? { summary: s } : {}), ...(error !== undefined ? { error } : {}) };
}

/** The JSON body POSTed to notifyUrl (README "Notifications"). */
export interface NotifyPayload {
  event: NotifyEvent;
  /** One readable line (Slack and Teams incoming webhooks show it). */
  text: string;
  command: string;
  job: string | null;
  host: string;
  dataDir: string;
  runId: string | null;
  startedAt: string;
  endedAt: string;
  outcome: RunSummary['outcome'];
  exitCode: number;
  /** The run's error, secrets redacted; null unless it failed. */
  error: string | null;
  checkpoint: string | null;
  /** endedAt - checkpoint, seconds; null when nothing is stored yet or the run ended before reading it. */
  lagSeconds: number | null;
  maxLagSeconds: number;
  sessionsWritten: number | null;
}

export interface NotifySettings {
  url: string;
  maxLagSeconds: number;
}

export interface SendOptions {
  fetch?: FetchLike;
  sleep?: Sleep;
  /** ms since the epoch. */
  now?: () => number;
  /** The signal that ends one attempt after `ms` (tests observe the budget through it). */
  timeoutSignal?: (ms: number) => AbortSignal;
  attempts?: number;
  /** Pause before attempt 2, 3, ... (the last value repeats). */
  backoffMs?: readonly number[];
  attemptTimeoutMs?: number;
  /** No attempt starts, and none runs, past this instant (ms since the epoch). */
  deadlineMs?: number;
}

export interface NotifyDeps extends SendOptions {
  logger?: Logger;
  host?: string;
  /** The whole notification step, all events together, ms. Default 15 000. */
  budgetMs?: number;
}

export const NOTIFY_DEFAULTS = { attempts: 3, backoffMs: [1_000, 2_000], attemptTimeoutMs: 5_000, budgetMs: 15_000 } as const;

// Defined in util/notify-url.ts so the configuration can use them without importing monitoring.
export { receiverOf, registerNotifyUrlSecret };

/** How the run ended, in the summary's terms. */
export function outcomeOf(end: RunEnd): RunSummary['outcome'] {
  if (end.summary) return end.summary.outcome;
  if (end.exitCode === 0) return 'succeeded';
  if (end.exitCode === 130 || end.exitCode === 143) return 'interrupted';
  return 'failed';
}

/** Seconds from the checkpoint to the end of the run; null when unknown. */
export function lagOf(end: RunEnd): number | null {
  const cp = end.summary?.checkpoint;
  if (!cp) return null;
  return Math.max(0, Math.round((end.endedMs - Date.parse(cp)) / 1000));
}

/**
 * Which events this run end calls for, given what was notified before, and the state to keep if
 * nothing gets delivered (a delivery then moves it on: `afterDelivery`). Every failed run notifies;
 * a success notifies once after a failure; the lag is judged after exports only (a backfill of old
 * history is far behind by nature) and notifies once per crossing.
 */
export function decideNotifications(end: RunEnd, prev: NotifyState, maxLagSeconds: number): { events: NotifyEvent[]; state: NotifyState } {
  const outcome = outcomeOf(end);
  const events: NotifyEvent[] = [];
  const state: NotifyState = { ...prev };
  if (outcome === 'failed') {
    events.push('run_failed');
    state.failing ??= { runId: runIdOf(end), command: end.command, since: new Date(end.endedMs).toISOString() };
  } else if ((outcome === 'succeeded' || outcome === 'nothing-to-do') && prev.failing) {
    events.push('run_recovered');
  }
  const lag = lagOf(end);
  if (end.summary?.kind === 'export' && lag !== null) {
    if (lag > maxLagSeconds) {
      if (!prev.lagExceeded) events.push('lag_exceeded');
    } else state.lagExceeded = null;
  }
  return { events, state };
}

/** The state once `event` has been delivered: a recovery closes the failure, a lag alert is marked as sent. */
export function afterDelivery(state: NotifyState, payload: NotifyPayload): NotifyState {
  if (payload.event === 'run_recovered') return { ...state, failing: null };
  if (payload.event === 'lag_exceeded') return { ...state, lagExceeded: { notifiedAt: payload.endedAt, lagSeconds: payload.lagSeconds ?? 0 } };
  return state;
}

/** The payload of one event; every string passes through the redaction. */
export function buildPayload(
  event: NotifyEvent,
  end: RunEnd,
  o: { maxLagSeconds: number; host: string; failingSince?: string },
): NotifyPayload {
  const outcome = outcomeOf(end);
  const lagSeconds = lagOf(end);
  const checkpoint = end.summary?.checkpoint ?? null;
  const error = outcome === 'failed' ? errorTextOf(end) : null;
  const what = `session-etl ${end.command}${end.job ? ` (job ${end.job})` : ''}`;
  const where = `on ${o.host} (data ${end.dataDir})`;
  const behind = checkpoint ? `checkpoint ${checkpoint}${lagSeconds !== null ? `, ${formatLag(lagSeconds)} behind` : ''}` : 'nothing stored yet';
  const sessions = end.summary ? `${end.summary.sessions.written} sessions written` : undefined;
  const text =
    event === 'run_failed'
      ? `${what} FAILED ${where}: ${clipText(error ?? 'unknown error', 400)} [${behind}; exit ${end.exitCode}]`
      : event === 'run_recovered'
        ? `${what} RECOVERED ${where}: ${outcome}${o.failingSince ? ` after failing since ${o.failingSince}` : ''}; ${[sessions, behind].filter(Boolean).join(', ')}`
        : `${what} LAG ${where}: data is ${lagSeconds !== null ? formatLag(lagSeconds) : '?'} behind, over the ${formatLag(o.maxLagSeconds)} limit [${behind}; last run ${outcome}]`;
  return redactDeep({
    event,
    text: chatText(text),
    command: end.command,
    job: end.job ?? null,
    host: o.host,
    dataDir: end.dataDir,
    runId: runIdOf(end),
    startedAt: new Date(end.startedMs).toISOString(),
    endedAt: new Date(end.endedMs).toISOString(),
    outcome,
    exitCode: end.exitCode,
    error,
    checkpoint,
    lagSeconds,
    maxLagSeconds: o.maxLagSeconds,
    sessionsWritten: end.summary?.sessions.written ?? null,
  });
}

/**
 * `text` as chat webhooks read it, with nothing a server's error body quoted in it (or the data)
 * could turn into markup: Slack's incoming webhooks take `&`, `<` and `>` as control characters
 * (`<!channel>` pings a channel, `<url|label>` is a link): they are written as `&amp;`, `&lt;` and
 * `&gt;`, which Slack and Teams both show as the characters. Teams renders markdown: a link
 * `[label](url)` (a label hiding where it leads) is broken as `[label] (url)`. `@here`, `@channel`
 * and `@everyone` get a zero-width space after the `@`, so no receiver takes them for a mention.
 * Line breaks and tabs become spaces, other control characters U+FFFD (util/terminal-text.ts). The
 * other fields carry the text as it is.
 */
export function chatText(s: string): string {
  return oneLine(s)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\]\(/g, '] (')
    .replace(/@(here|channel|everyone)\b/gi, '@\u200b$1');
}

export interface Delivery {
  delivered: boolean;
  attempts: number;
  /** Why it was not delivered (the last attempt's failure). */
  error?: string;
}

/** POSTs one payload, retrying transient failures (network, timeout, 408, 429, 5xx) within the deadline. */
export async function postNotification(url: string, payload: NotifyPayload, o: SendOptions = {}): Promise<Delivery> {
  const fetchFn = o.fetch ?? fetch;
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? realSleep;
  const timeoutSignal = o.timeoutSignal ?? ((ms: number) => AbortSignal.timeout(ms));
  const attempts = o.attempts ?? NOTIFY_DEFAULTS.attempts;
  const backoff = o.backoffMs ?? NOTIFY_DEFAULTS.backoffMs;
  const perAttempt = o.attemptTimeoutMs ?? NOTIFY_DEFAULTS.attemptTimeoutMs;
  const deadline = o.deadlineMs ?? now() + NOTIFY_DEFAULTS.budgetMs;
  const body = JSON.stringify(redactDeep(payload));
  let error = 'no time left for an attempt';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const remaining = deadline - now();
    if (remaining <= 0) return { delivered: false, attempts: attempt - 1, error };
    const timeoutMs = Math.min(perAttempt, remaining);
    const signal = timeoutSignal(timeoutMs);
    let retryable = true;
    try {
      const res = await fetchFn(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'session-etl' },
        body,
        redirect: 'manual',
        signal,
      });
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) return { delivered: true, attempts: attempt };
      if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
        error = `HTTP ${res.status || 'redirect'}: redirects are not followed; set the receiver's final URL`;
        retryable = false;
      } else {
        error = `HTTP ${res.status}`;
        retryable = res.status === 408 || res.status === 429 || res.status >= 500;
      }
    } catch (err) {
      error = signal.aborted ? `no answer within ${timeoutMs} ms` : describeNetworkError(err);
    }
    if (!retryable || attempt === attempts) return { delivered: false, attempts: attempt, error: redact(error) };
    const pause = backoff[Math.min(attempt - 1, backoff.length - 1)] ?? 0;
    if (now() + pause >= deadline) return { delivered: false, attempts: attempt, error: redact(error) };
    await sleep(pause);
  }
  return { delivered: false, attempts, error: redact(error) };
}

/**
 * The notification step at the end of a run: reads what was notified before, posts the events
 * this run calls for, records the new state. Never throws and never takes longer than the budget
 * (plus a local file read and write).
 */
export async function notifyRunEnd(settings: NotifySettings, end: RunEnd, deps: NotifyDeps = {}): Promise<void> {
  const logger = deps.logger ?? silentLogger;
  const receiver = receiverOf(settings.url);
  try {
    const now = deps.now ?? Date.now;
    const deadlineMs = deps.deadlineMs ?? now() + (deps.budgetMs ?? NOTIFY_DEFAULTS.budgetMs);
    const prev = await readNotifyState(end.dataDir);
    const decided = decideNotifications(end, prev, settings.maxLagSeconds);
    let state = decided.state;
    const host = deps.host ?? hostname();
    for (const event of decided.events) {
      const payload = buildPayload(event, end, {
        maxLagSeconds: settings.maxLagSeconds,
        host,
        ...(prev.failing ? { failingSince: prev.failing.since } : {}),
      });
      const d = await postNotification(settings.url, payload, { ...deps, deadlineMs });
      if (d.delivered) {
        logger.info({ event, receiver, attempts: d.attempts }, 'notification sent');
        state = afterDelivery(state, payload);
      } else {
        logger.warn(
          { event, receiver, attempts: d.attempts, error: d.error },
          "notification not delivered (the run's outcome and exit code are unchanged)",
        );
      }
    }
    if (JSON.stringify(state) !== JSON.stringify(prev)) {
      await writeNotifyState(end.dataDir, state).catch((err: NodeJS.ErrnoException) =>
        logger.warn({ error: redact(err.code ?? String(err)), dataDir: end.dataDir }, 'could not record what was notified'),
      );
    }
  } catch (err) {
    logger.warn({ receiver, error: redact(err instanceof Error ? err.message : String(err)) }, 'notification step failed');
  }
}

function runIdOf(end: RunEnd): string | null {
  return end.summary?.runId ?? (end.error as { runId?: string } | undefined)?.runId ?? null;
}

/** The run's error: the summary's (already says what is committed and what to do), or the message and its causes. */
function errorTextOf(end: RunEnd): string {
  if (end.summary?.error) return clipText(redact(end.summary.error), MAX_ERROR_CHARS);
  const parts: string[] = [];
  let cur: unknown = end.error;
  for (let depth = 0; cur && depth < 8; depth++) {
    parts.push(cur instanceof Error ? cur.message : String(cur));
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return clipText(redact(parts.join('; caused by: ') || `exit code ${end.exitCode}`), MAX_ERROR_CHARS);
}

/** 90 → "1m 30s", 97200 → "1d 3h": the two largest units. */
export function formatLag(seconds: number): string {
  const units: Array<[string, number]> = [['d', 86_400], ['h', 3_600], ['m', 60], ['s', 1]];
  const parts: string[] = [];
  let rest = Math.max(0, Math.round(seconds));
  for (const [u, k] of units) {
    if (rest >= k || (u === 's' && !parts.length)) {
      parts.push(`${Math.floor(rest / k)}${u}`);
      rest %= k;
    }
    if (parts.length === 2) break;
  }
  return parts.join(' ');
}
