/**
 * Run notifications (`notifyUrl`): events and delivery are docs/monitoring.md "Notifications". Delivery never
 * changes a run's outcome; the receiver is logged as scheme and host only (the URL's path often is the webhook's secret).
 */
import { humanDuration } from '../time/human-duration.js';
import { hostname } from 'node:os';
import type { RunSummary } from '../pipeline/run.js';
import { clipText, MAX_ERROR_CHARS } from '../util/clip-text.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { oneLine } from '../util/terminal-text.js';
import { redact, redactDeep } from '../util/redact.js';
import { receiverOf, registerNotifyUrlSecret } from '../util/notify-url.js';
import { deadlineOf, deliverAll, type Delivery, type SendOptions } from './notify-delivery.js';
import { readNotifyState, writeNotifyState, type NotifyState } from './notify-state.js';
import { describeAnomaly, type VolumeAnomaly } from '../store/volume-anomalies.js';
import { dayArgs, suggestedCommand } from '../util/suggested-command.js';

type NotifyEvent = 'run_failed' | 'run_recovered' | 'lag_exceeded' | 'volume_anomaly';

/** How a run ended, as the CLI or the scheduler saw it. */
export interface RunEnd {
  /** export, backfill or schedule. */
  command: string;
  job?: string;
  /** With accounts, the deployment's data directory (the one holding every account). */
  dataDir: string;
  /** A many-account data directory's account (its notifications are judged on their own). */
  account?: string;
  startedMs: number;
  endedMs: number;
  /** A scheduled run: the exit code `export` would have. */
  exitCode: number;
  summary?: RunSummary;
  error?: unknown;
}

/** A failure's own summary (RunFailedError) is used when no other is given. */
export function runEndOf(e: Omit<RunEnd, 'summary' | 'error'> & { summary?: RunSummary | undefined; error?: unknown }): RunEnd {
  const { summary, error, ...rest } = e;
  const s = summary ?? (error as { summary?: RunSummary } | undefined)?.summary;
  return { ...rest, ...(s ? { summary: s } : {}), ...(error !== undefined ? { error } : {}) };
}

/** The JSON body POSTed to notifyUrl (docs/monitoring.md "Notifications"). */
export interface NotifyPayload {
  event: NotifyEvent;
  /** One readable line (Slack and Teams incoming webhooks show it). */
  text: string;
  command: string;
  job: string | null;
  account: string | null;
  host: string;
  dataDir: string;
  runId: string | null;
  startedAt: string;
  endedAt: string;
  outcome: RunSummary['outcome'];
  exitCode: number;
  /** Secrets redacted, escaped as `text` is (chatText); null unless it failed. */
  error: string | null;
  checkpoint: string | null;
  /** endedAt - checkpoint; null when nothing is stored yet or the run ended before reading it. */
  lagSeconds: number | null;
  maxLagSeconds: number;
  sessionsWritten: number | null;
  volumeAnomaly: VolumeAnomaly | null;
}

export interface NotifySettings {
  url: string;
  maxLagSeconds: number;
}

export interface NotifyDeps extends SendOptions {
  logger?: Logger;
  host?: string;
}

// Defined in util/notify-url.ts so the configuration can use them without importing monitoring.
export { receiverOf, registerNotifyUrlSecret };

export function outcomeOf(end: RunEnd): RunSummary['outcome'] {
  if (end.summary) return end.summary.outcome;
  if (end.exitCode === 0) return 'succeeded';
  if (end.exitCode === 130 || end.exitCode === 143) return 'interrupted';
  return 'failed';
}

function lagOf(end: RunEnd): number | null {
  const cp = end.summary?.checkpoint;
  if (!cp) return null;
  return Math.max(0, Math.round((end.endedMs - Date.parse(cp)) / 1000));
}

/**
 * The events this run end calls for, and the state to keep if nothing gets delivered. A success notifies once after
 * a failure; the lag is judged after exports only (a backfill is far behind by nature), once per crossing.
 */
export function decideNotifications(
  end: RunEnd,
  prev: NotifyState,
  maxLagSeconds: number,
): { events: NotifyEvent[]; state: NotifyState; anomalies: VolumeAnomaly[] } {
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
    if (lag <= maxLagSeconds) state.lagExceeded = null;
    else if (!prev.lagExceeded) events.push('lag_exceeded');
  }
  // Each anomalous day once (a delivery records it: afterDelivery).
  const notified = new Set(prev.volumeAnomalies ?? []);
  const anomalies = (end.summary?.volumeAnomalies ?? []).filter((a) => !notified.has(a.date));
  return { events, state, anomalies };
}

/** Days remembered as notified for volume anomalies, at most (the oldest forgotten first). */
const NOTIFIED_DAYS_KEPT = 1_000;

/** The state once `payload` has been delivered. */
function afterDelivery(state: NotifyState, payload: NotifyPayload): NotifyState {
  if (payload.event === 'run_recovered') return { ...state, failing: null };
  if (payload.event === 'lag_exceeded') return { ...state, lagExceeded: { notifiedAt: payload.endedAt, lagSeconds: payload.lagSeconds ?? 0 } };
  if (payload.event === 'volume_anomaly' && payload.volumeAnomaly) {
    const days = [...new Set([...(state.volumeAnomalies ?? []), payload.volumeAnomaly.date])].sort().slice(-NOTIFIED_DAYS_KEPT);
    return { ...state, volumeAnomalies: days };
  }
  return state;
}

/** Every string passes through the redaction. */
export function buildPayload(
  event: NotifyEvent,
  end: RunEnd,
  o: { maxLagSeconds: number; host: string; failingSince?: string; anomaly?: VolumeAnomaly },
): NotifyPayload {
  const outcome = outcomeOf(end);
  const lagSeconds = lagOf(end);
  const checkpoint = end.summary?.checkpoint ?? null;
  const error = outcome === 'failed' ? errorTextOf(end) : null;
  const about = [end.job ? `job ${end.job}` : '', end.account !== undefined ? `account ${end.account}` : ''].filter(Boolean).join(', ');
  const what = `session-etl ${end.command}${about ? ` (${about})` : ''}`;
  const where = `on ${o.host} (data ${end.dataDir})`;
  const behind = checkpoint ? `checkpoint ${checkpoint}${lagSeconds !== null ? `, ${humanDuration(lagSeconds)} behind` : ''}` : 'nothing stored yet';
  const sessions = end.summary ? `${end.summary.sessions.written} sessions written` : undefined;
  const anomaly = event === 'volume_anomaly' ? (o.anomaly ?? null) : null;
  const text =
    event === 'volume_anomaly' && anomaly
      ? `${what} VOLUME ANOMALY ${where}: ${describeAnomaly(anomaly)} (its weekday's median over the previous weeks); ` +
        `the endpoint may have answered without part of that day; compare it with the source: ${suggestedCommand('verify', dayArgs(anomaly.date), { dataDir: end.dataDir, account: end.account })}`
      : event === 'run_failed'
      ? `${what} FAILED ${where}: ${clipText(error ?? 'unknown error', 400)} [${behind}; exit ${end.exitCode}]`
      : event === 'run_recovered'
        ? `${what} RECOVERED ${where}: ${outcome}${o.failingSince ? ` after failing since ${o.failingSince}` : ''}; ${[sessions, behind].filter(Boolean).join(', ')}`
        : `${what} LAG ${where}: data is ${lagSeconds !== null ? humanDuration(lagSeconds) : '?'} behind, over the ${humanDuration(o.maxLagSeconds)} limit [${behind}; last run ${outcome}]`;
  return redactDeep({
    event,
    text: chatText(text),
    command: end.command,
    job: end.job ?? null,
    account: end.account ?? null,
    host: oneLine(o.host),
    dataDir: oneLine(end.dataDir),
    runId: runIdOf(end),
    startedAt: new Date(end.startedMs).toISOString(),
    endedAt: new Date(end.endedMs).toISOString(),
    outcome,
    exitCode: end.exitCode,
    // A receiver may show any field (a workflow posting `error` to a channel): escaped as `text` is.
    error: error === null ? null : chatText(error),
    checkpoint,
    lagSeconds,
    maxLagSeconds: o.maxLagSeconds,
    sessionsWritten: end.summary?.sessions.written ?? null,
    volumeAnomaly: anomaly,
  });
}

/** No markup or mention (`<!channel>`, `[label](url)`, `@here`) from a quoted error body (docs/monitoring.md "Notifications"). */
export function chatText(s: string): string {
  return oneLine(s)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\]\(/g, '] (')
    .replace(/@(here|channel|everyone)\b/gi, '@\u200b$1');
}

export async function postNotification(url: string, payload: NotifyPayload, o: SendOptions = {}): Promise<Delivery> {
  return (await deliverAll(url, [JSON.stringify(redactDeep(payload))], o))[0]!;
}

/** One run end to notify, with the logger that names it (an account's child logger). */
type RunEndNotice = { end: RunEnd; logger?: Logger };

/** notifyRunEnds for one run end. */
export function notifyRunEnd(settings: NotifySettings, end: RunEnd, deps: NotifyDeps = {}): Promise<void> {
  return notifyRunEnds(settings, [{ end, ...(deps.logger ? { logger: deps.logger } : {}) }], deps);
}

/**
 * The notification step: reads what was notified before, posts the events each run end calls for (each judged on
 * its own state, all posts side by side under one budget: 15 s at most whatever the number of accounts), records
 * the new state. Never throws.
 */
export async function notifyRunEnds(settings: NotifySettings, notices: readonly RunEndNotice[], deps: NotifyDeps = {}): Promise<void> {
  const receiver = receiverOf(settings.url);
  const deadlineMs = deadlineOf(deps);
  const host = deps.host ?? hostname();
  try {
    const decided = await Promise.all(
      notices.map(async (n) => {
        const prev = await readNotifyState(n.end.dataDir, n.end.account);
        const d = decideNotifications(n.end, prev, settings.maxLagSeconds);
        const payloads = [
          ...d.events.map((event) =>
            buildPayload(event, n.end, { maxLagSeconds: settings.maxLagSeconds, host, ...(prev.failing ? { failingSince: prev.failing.since } : {}) }),
          ),
          ...d.anomalies.map((anomaly) => buildPayload('volume_anomaly', n.end, { maxLagSeconds: settings.maxLagSeconds, host, anomaly })),
        ];
        return { n, prev, state: d.state, payloads };
      }),
    );
    const bodies = decided.flatMap((d) => d.payloads.map((p) => JSON.stringify(redactDeep(p))));
    const deliveries = await deliverAll(settings.url, bodies, { ...deps, deadlineMs });
    let k = 0;
    await Promise.all(
      decided.map(async ({ n, prev, state: decidedState, payloads }) => {
        const logger = n.logger ?? deps.logger ?? silentLogger;
        let state = decidedState;
        for (const payload of payloads) {
          const d = deliveries[k++]!;
          const event = payload.event;
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
          await writeNotifyState(n.end.dataDir, state, n.end.account).catch((err: NodeJS.ErrnoException) =>
            logger.warn({ error: redact(err.code ?? String(err)), dataDir: n.end.dataDir }, 'could not record what was notified'),
          );
        }
      }),
    );
  } catch (err) {
    (deps.logger ?? silentLogger).warn({ receiver, error: redact(err instanceof Error ? err.message : String(err)) }, 'notification step failed');
  }
}

function runIdOf(end: RunEnd): string | null {
  return end.summary?.runId ?? (end.error as { runId?: string } | undefined)?.runId ?? null;
}

/** The summary's (it says what is committed and what to do), or the message and its causes. */
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
