/**
 * The POSTs of one notification step go out side by side under one deadline, so a receiver that never answers
 * delays a run by the budget at most however many accounts failed (issue 28: four took 61 s one after the other).
 */
import pLimit from 'p-limit';
import type { FetchLike } from '../reporting/transport.js';
import { describeNetworkError } from '../util/describe-network-error.js';
import { redact } from '../util/redact.js';
import { realSleep, type Sleep } from '../util/sleep.js';

export interface SendOptions {
  fetch?: FetchLike;
  sleep?: Sleep;
  now?: () => number;
  /** Tests observe the budget through it. */
  timeoutSignal?: (ms: number) => AbortSignal;
  attempts?: number;
  /** Pause before attempt 2, 3, ... (the last value repeats). */
  backoffMs?: readonly number[];
  attemptTimeoutMs?: number;
  /** No attempt starts, and none runs, past this instant. */
  deadlineMs?: number;
  /** Without `deadlineMs`: the deadline this many ms from now. */
  budgetMs?: number;
  concurrency?: number;
  /** Aborts the attempts in flight and starts no other (a stopping scheduler). */
  stopSignal?: AbortSignal;
}

const NOTIFY_DEFAULTS = { attempts: 3, backoffMs: [1_000, 2_000], attemptTimeoutMs: 5_000, budgetMs: 15_000, concurrency: 8 } as const;

/** The instant a delivery (or a notification step) must be over. */
export function deadlineOf(o: SendOptions): number {
  return o.deadlineMs ?? (o.now ?? Date.now)() + (o.budgetMs ?? NOTIFY_DEFAULTS.budgetMs);
}

export interface Delivery {
  delivered: boolean;
  attempts: number;
  /** The last attempt's failure. */
  error?: string;
}

/** POSTs each body, retrying transient failures (network, timeout, 408, 429, 5xx) within the deadline; never throws. */
export async function deliverAll(url: string, bodies: readonly string[], o: SendOptions = {}): Promise<Delivery[]> {
  const fetchFn = o.fetch ?? fetch;
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? realSleep;
  const timeoutSignal = o.timeoutSignal ?? ((ms: number) => AbortSignal.timeout(ms));
  const attempts = o.attempts ?? NOTIFY_DEFAULTS.attempts;
  const backoff = o.backoffMs ?? NOTIFY_DEFAULTS.backoffMs;
  const perAttempt = o.attemptTimeoutMs ?? NOTIFY_DEFAULTS.attemptTimeoutMs;
  const deadline = deadlineOf(o);
  const stop = o.stopSignal;
  const results: Delivery[] = bodies.map(() => ({ delivered: false, attempts: 0, error: 'no time left for an attempt' }));
  const attempt = async (i: number): Promise<{ retryable: boolean }> => {
    const r = results[i]!;
    const timeoutMs = Math.min(perAttempt, deadline - now());
    const timeout = timeoutSignal(timeoutMs);
    r.attempts++;
    try {
      const res = await fetchFn(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'session-etl' },
        body: bodies[i]!,
        redirect: 'manual',
        signal: stop ? AbortSignal.any([timeout, stop]) : timeout,
      });
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) {
        r.delivered = true;
        delete r.error;
        return { retryable: false };
      }
      if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
        r.error = `HTTP ${res.status || 'redirect'}: redirects are not followed; set the receiver's final URL`;
        return { retryable: false };
      }
      r.error = `HTTP ${res.status}`;
      return { retryable: res.status === 408 || res.status === 429 || res.status >= 500 };
    } catch (err) {
      r.error = redact(stop?.aborted ? 'stopped (the process is stopping) before an answer' : timeout.aborted ? `no answer within ${timeoutMs} ms` : describeNetworkError(err));
      return { retryable: !stop?.aborted };
    }
  };

  // A few attempts at a time (p-limit's queue is first in, first out): every body's first attempt is
  // queued at once, a retry only after its pause, so no retry goes before a first attempt.
  const limit = pLimit(Math.max(1, Math.min(o.concurrency ?? NOTIFY_DEFAULTS.concurrency, bodies.length)));
  const tryOnce = async (i: number): Promise<{ retryable: boolean }> => {
    const r = results[i]!;
    if (stop?.aborted || deadline - now() <= 0) {
      if (stop?.aborted && !r.attempts) r.error = 'not sent: the process is stopping';
      return { retryable: false };
    }
    return attempt(i);
  };
  const deliver = async (i: number): Promise<void> => {
    const r = results[i]!;
    for (;;) {
      const { retryable } = await limit(() => tryOnce(i));
      if (!retryable || r.attempts >= attempts) return;
      const pause = backoff[Math.min(r.attempts - 1, backoff.length - 1)] ?? 0;
      if (now() + pause >= deadline) return;
      await sleep(pause, stop).catch(() => {});
    }
  };
  await Promise.all(bodies.map((_, i) => deliver(i)));
  return results;
}
