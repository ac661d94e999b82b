/**
 * The chunk runner: fetches windows under a bounded, adaptive concurrency; splits a window in two
 * when the server refuses it with a GraphQL error, or when it returns at least
 * `maxResultsPerQuery` records (a silently capped answer looks exactly like that), down to
 * `minChunkSeconds`; hands each complete leaf window to `onWindow` (which commits it).
 */
import pLimit from 'p-limit';
import { GraphQLResponseError } from '../reporting/errors/GraphQLResponseError.js';
import { ReportingError } from '../reporting/errors/ReportingError.js';
import type { ReportingClient } from '../reporting/client.js';
import { WindowFailedError } from './errors.js';
import type { RateController } from './rate-controller.js';
import { bisect, describeWindow, type Window } from './windows.js';

export interface ExtractStats {
  requests: number;
  retries: number;
  rateLimited: number;
  bisections: number;
  windowsDone: number;
  records: number;
}

export interface ExtractOptions {
  client: ReportingClient;
  windows: readonly Window[];
  controller: RateController;
  maxConcurrency: number;
  maxResultsPerQuery?: number;
  minChunkSeconds: number;
  /** Stop starting windows when aborted (soft stop: running ones finish). */
  stopSignal?: AbortSignal;
  /** Abort running requests (hard stop). */
  abortSignal?: AbortSignal;
  now: () => number;
  stats: ExtractStats;
  /** Receives every complete leaf window with its raw records and when they were fetched (ms). */
  onWindow(window: Window, records: unknown[], fetchedAtMs: number): Promise<void>;
  onLog?(event: string, fields: Record<string, unknown>): void;
}

export interface ExtractOutcome {
  /** Windows not started because of a stop or an earlier failure. */
  skipped: Window[];
  /** The first failure, if any. */
  error?: Error;
}

export async function extractWindows(opts: ExtractOptions): Promise<ExtractOutcome> {
  const limit = pLimit(Math.max(1, opts.controller.concurrency));
  const skipped: Window[] = [];
  let firstError: Error | undefined;
  const failFast = new AbortController();

  const resize = (n: number) => {
    limit.concurrency = Math.max(1, Math.min(opts.maxConcurrency, n));
  };

  opts.controller.onConcurrencyChange = resize;
  // A failure stops new windows from starting; windows already running finish and commit.
  const stopped = () => Boolean(opts.stopSignal?.aborted) || failFast.signal.aborted;
  const abort = opts.abortSignal;

  const fetchLeaf = async (w: Window): Promise<void> => {
    let lastMessage = '';
    const stack: Window[] = [w];
    while (stack.length) {
      const cur = stack.pop()!;
      if (opts.abortSignal?.aborted) throw opts.abortSignal.reason;
      opts.stats.requests++;
      let records: unknown[];
      try {
        const r = await opts.client.fetchSessionsRaw(cur.start, cur.end, abort);
        opts.stats.requests += r.attempts - 1;
        opts.stats.retries += r.attempts - 1;
        records = r.value;
        if (opts.maxResultsPerQuery !== undefined && records.length >= opts.maxResultsPerQuery) {
          lastMessage = `the answer held ${records.length} records, at least --max-results-per-query (${opts.maxResultsPerQuery}), so it may be capped`;
          throw new SplitNeeded(lastMessage);
        }
      } catch (err) {
        if (err instanceof SplitNeeded || err instanceof GraphQLResponseError) {
          lastMessage = err instanceof GraphQLResponseError ? err.message : lastMessage;
          const halves = bisect(cur, opts.minChunkSeconds);
          if (!halves) {
            throw new WindowFailedError(
              cur,
              `it cannot be split below the minimum chunk (${opts.minChunkSeconds} s); last server message: ${lastMessage}. ` +
                'Lower --min-chunk, or raise --max-results-per-query if the server allows more',
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
          throw new WindowFailedError(cur, err.message, { cause: err });
        }
        throw err;
      }
      opts.stats.records += records.length;
      await opts.onWindow(cur, records, opts.now());
    }
  };

  const tasks = opts.windows.map((w) =>
    limit(async () => {
      if (stopped()) {
        skipped.push(w);
        return;
      }
      try {
        await fetchLeaf(w);
        opts.stats.windowsDone++;
      } catch (err) {
        if (opts.abortSignal?.aborted) {
          skipped.push(w);
          return;
        }
        if (!firstError) {
          firstError = err instanceof Error ? err : new Error(String(err));
          failFast.abort(firstError);
        }
        skipped.push(w);
      }
    }),
  );
  await Promise.all(tasks);
  opts.controller.onConcurrencyChange = undefined;
  return { skipped, ...(firstError ? { error: firstError } : {}) };
}

class SplitNeeded extends Error {}
