/** Between extraction and the store: each window's body becomes one commit of one NDJSON file (flatten.ts). */
import type { SessionsBody } from '../reporting/sessions-body.js';
import type { SessionStore } from '../store/session-store.js';
import { describeWindow, type Window } from '../time/windows.js';
import type { Logger } from '../util/logger.js';
import { memoryTraceOn, traced } from '../util/memory-trace.js';
import { checkedRecords, type InvalidPolicy } from './flatten.js';
import type { RunTally } from './run-tally.js';

export class WindowLoader {
  constructor(
    private readonly store: SessionStore,
    private readonly account: string,
    private readonly runId: string,
    private readonly policy: InvalidPolicy,
    private readonly tally: RunTally,
    private readonly logger: Logger,
    /** Told after each commit (the state snapshot, the progress bar). */
    private readonly committed: () => void,
  ) {}

  /** Commits one window with its records; resolves once it is committed. */
  async load(w: Window, body: SessionsBody, fetchedAtMs: number): Promise<void> {
    const bytes = memoryTraceOn && body.kind === 'ndjson' ? body.ndjson.byteLength : 0;
    if (memoryTraceOn) {
      traced.answers++;
      traced.answerBytes += bytes;
    }
    try {
      // A body in the fast shape goes as it is; any other is validated record by record first.
      const flat = checkedRecords(body, this.policy);
      const r = await this.store.commitWindow({
        account: this.account,
        window: w,
        ndjson: { bytes: flat.ndjson, count: flat.count, extractedAt: fetchedAtMs / 1000 },
        rejected: flat.rejected,
        runId: this.runId,
      });
      this.tally.totals.rejected += flat.rejected.length;
      this.tally.totals.duplicatesDropped += flat.duplicatesDropped;
      if (flat.rejected.length) this.logger.warn({ window: describeWindow(w), rejected: flat.rejected.length }, 'records quarantined in rejected_sessions');
      this.tally.totals.fetched += r.written;
      this.committed();
    } finally {
      if (memoryTraceOn) {
        traced.answers--;
        traced.answerBytes -= bytes;
        traced.commits++;
      }
    }
  }
}
