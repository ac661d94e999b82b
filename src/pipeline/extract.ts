/**
 * The chunk runner: fetches windows under an adaptive concurrency; splits a window in two (down to
 * `minChunkSeconds`) on a GraphQL error, a body too large, or at least `maxResultsPerQuery` records
 * (a silently capped answer looks exactly like that); hands each leaf window to `onWindow`.
 */
import pLimit from 'p-limit';
import { BodyTooLargeError } from '../reporting/errors/body-too-large-error.js';
import { GraphQLResponseError } from '../reporting/errors/graphql-response-error.js';
import { ReportingError } from '../reporting/errors/reporting-error.js';
import type { ReportingClient } from '../reporting/client.js';
import type { SessionsBody } from '../reporting/sessions-body.js';
import type { AnswerBytes } from './answer-bytes.js';
import { WindowFailedError } from './errors.js';
import type { RateController } from './rate-controller.js';
import { bisect, describeWindow, type Window } from '../time/windows.js';

export interface ExtractStats {
  /** requests, retries (one per "retrying a request" log line) and rateLimited: counted by the reporting client, never here. */
  requests: number;
  retries: number;
  rateLimited: number;
  bisections: number;
  windowsDone: number;
}

export interface ExtractOptions {
  client: ReportingClient;
  windows: readonly Window[];
  controller: RateController;
  maxConcurrency: number;
  /** Windows fetched and waiting for their commit, at most (default 2 × maxConcurrency; the memory budget sets it). */
  commitSlots?: number;
  /** The bytes of answers held until committed, shared by the run's accounts (answer-bytes.ts). Absent: not bounded. */
  answers?: AnswerBytes;
  maxResultsPerQuery?: number;
  minChunkSeconds: number;
  /** Soft stop: no new windows start. */
  stopSignal?: AbortSignal;
  /** Hard stop: running requests are aborted. */
  abortSignal?: AbortSignal;
  now: () => number;
  stats: ExtractStats;
  /**
   * Receives every leaf window with its body and when it was fetched (ms); resolves once committed.
   * The next windows are fetched meanwhile (up to `commitSlots` and `answers`' bytes wait for their
   * commit); a failed commit fails the run like a failed request.
   */
  onWindow(window: Window, body: SessionsBody, fetchedAtMs: number): Promise<void>;
  onLog?(event: string, fields: Record<string, unknown>): void;
}

export interface ExtractOutcome {
  /** Windows not started because of a stop or an earlier failure. */
  skipped: Window[];
  error?: Error;
}

export async function extractWindows(opts: ExtractOptions): Promise<ExtractOutcome> {
  const limit = pLimit(Math.max(1, opts.controller.concurrency));
  const skipped: Window[] = [];
  let firstError: Error | undefined;
  const failFast = new AbortController();

  // The controller lowers the pool when 429s point at a concurrency limit, and raises it again.
  opts.controller.onConcurrencyChange = (n: number) => {
    limit.concurrency = Math.max(1, Math.min(opts.maxConcurrency, n));
    opts.onLog?.('concurrency', { concurrency: limit.concurrency });
  };
  // A failure stops new windows from starting; windows already running finish and commit.
  const stopped = () => Boolean(opts.stopSignal?.aborted) || failFast.signal.aborted;
  const abort = opts.abortSignal;
  const commits = new Set<Promise<void>>();
  const slots = Math.max(1, opts.commitSlots ?? 2 * opts.maxConcurrency);
  const fail = (err: unknown) => {
    if (!firstError) {
      firstError = err instanceof Error ? err : new Error(String(err));
      failFast.abort(firstError);
    }
  };

  const fetchLeaf = async (w: Window): Promise<Array<Promise<void>>> => {
    const leaves: Array<Promise<void>> = [];
    let lastMessage = '';
    const stack: Window[] = [w];
    while (stack.length) {
      const cur = stack.pop()!;
      if (opts.abortSignal?.aborted) throw opts.abortSignal.reason;
      let body: SessionsBody;
      // Held from the request until the window is committed (or the answer is dropped).
      const ticket = await opts.answers?.begin(abort);
      try {
        body = (await opts.client.fetchSessionsBody(cur.start, cur.end, abort)).value;
        ticket?.answered(body.bytes);
        const count = body.kind === 'ndjson' ? body.count : body.records.length;
        if (opts.maxResultsPerQuery !== undefined && count >= opts.maxResultsPerQuery) {
          throw new SplitNeeded(`the answer held ${count} records, at least --max-results-per-query (${opts.maxResultsPerQuery}), so it may be capped`);
        }
      } catch (err) {
        ticket?.release();
        // A body over maxBodyBytes splits too: a shorter window gives a smaller body.
        if (err instanceof SplitNeeded || err instanceof GraphQLResponseError || err instanceof BodyTooLargeError) {
          lastMessage = err.message;
          const halves = bisect(cur, opts.minChunkSeconds);
          if (!halves) {
            throw new WindowFailedError(
              cur,
              `it cannot be split below the minimum chunk (${opts.minChunkSeconds} s); last server message: ${lastMessage}. ` +
                (err instanceof BodyTooLargeError
                  ? 'Lower --min-chunk, or raise maxBodyBytes in the configuration and the memory budget (--memory-limit, or the container\'s memory), whose share caps it (session-etl config shows the cap)'
                  : 'Lower --min-chunk, or raise --max-results-per-query if the server allows more'),
              { cause: err },
            );
          }
          opts.stats.bisections++;
          opts.onLog?.('bisect', { window: describeWindow(cur), reason: lastMessage });
          // Newest half pushed first so the older half is fetched first.
          stack.push(halves[1], halves[0]);
          continue;
        }
        if (err instanceof ReportingError) {
          // The attempts are told when the request was retried, or could have been (a retryable error).
          const told = err.retryable || (err.attempts ?? 1) > 1 ? err.attempts : undefined;
          throw new WindowFailedError(cur, err.message, { cause: err }, told);
        }
        throw err;
      }
      let committed: Promise<void>;
      try {
        committed = opts.onWindow(cur, body, opts.now());
      } catch (err) {
        ticket?.release();
        throw err;
      }
      if (ticket) void committed.then(ticket.release, ticket.release);
      committed.catch(() => {}); // observed below
      leaves.push(committed);
    }
    return leaves;
  };

  const tasks = opts.windows.map((w) =>
    limit(async () => {
      while (commits.size >= slots) await Promise.race(commits);
      if (stopped()) {
        skipped.push(w);
        return;
      }
      try {
        const leaves = await fetchLeaf(w);
        const done: Promise<void> = Promise.all(leaves).then(
          () => void opts.stats.windowsDone++,
          (err: unknown) => fail(err),
        );
        commits.add(done);
        void done.finally(() => commits.delete(done));
      } catch (err) {
        // A hard stop is no failure: the window is skipped.
        if (!opts.abortSignal?.aborted) fail(err);
        skipped.push(w);
      }
    }),
  );
  await Promise.all(tasks);
  while (commits.size) await Promise.all([...commits]);
  opts.controller.onConcurrencyChange = undefined;
  return { skipped, ...(firstError ? { error: firstError } : {}) };
}

class SplitNeeded extends Error {}
