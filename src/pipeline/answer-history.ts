/** What the rate controller remembers of the answers and its own pauses: the evidence its rules read. */

/** The last answers the 429 shares are taken over. */
export const ANSWERS = 30;
/** How far back accepted answers and pauses are kept, ms. */
const MEMORY_MS = 10_000;

export class AnswerHistory {
  /** Accepted answers: when, and how many requests were in flight then (itself included). */
  private done: Array<{ at: number; inFlight: number }> = [];
  /** The pauses every worker waited out, oldest first. */
  private pauses: Array<{ from: number; until: number }> = [];
  /** The last answers, true for a 429. */
  private answers: boolean[] = [];

  accepted(at: number, inFlight: number): void {
    this.done.push({ at, inFlight });
    this.answered(false);
    if (this.done.length > 4096) this.forget(at);
  }

  refused(): void {
    this.answered(true);
  }

  /** A new pause, or (`extend`) the last one lasting until `until`. */
  paused(from: number, until: number, extend: boolean): void {
    if (extend) (this.pauses.at(-1) as { until: number }).until = until;
    else this.pauses.push({ from, until });
  }

  /** The share of the answers accepted within 2 s before `at` that came with `inFlight` or more requests in flight. */
  acceptedAsMany(at: number, inFlight: number): number {
    let all = 0;
    let asMany = 0;
    for (let i = this.done.length - 1; i >= 0 && (this.done[i] as { at: number }).at > at - 2000; i--) {
      all++;
      if ((this.done[i] as { inFlight: number }).inFlight >= inFlight) asMany++;
    }
    return all ? asMany / all : 0;
  }

  /** Answers accepted in (from, to]. */
  acceptedWithin(from: number, to: number): number {
    return this.done.filter((d) => d.at > from && d.at <= to).length;
  }

  /** The share of 429s among the last `last` answers. */
  refusedShare(last = ANSWERS): number {
    const answers = this.answers.slice(-last);
    return answers.length ? answers.filter(Boolean).length / answers.length : 0;
  }

  /** How much of [from, to) was spent paused or before the first attempt (`firstRelease`), ms. */
  idleMs(from: number, to: number, firstRelease: number | undefined): number {
    let idle = firstRelease === undefined ? to - from : Math.max(0, Math.min(to, firstRelease) - from);
    for (const p of this.pauses) {
      const a = Math.max(from, p.from, firstRelease ?? from);
      const z = Math.min(to, p.until);
      if (z > a) idle += z - a;
    }
    return Math.min(to - from, idle);
  }

  /** The most answers accepted within any one second of the 10 s before `t` (after `from`). */
  peakRate(t: number, from = -Infinity): number {
    let most = 0;
    let i0 = 0;
    while (i0 < this.done.length && (this.done[i0] as { at: number }).at <= from) i0++;
    for (let i = i0, j = i0; i < this.done.length; i++) {
      const at = (this.done[i] as { at: number }).at;
      if (at > t) break;
      while ((this.done[j] as { at: number }).at <= at - 1000) j++;
      most = Math.max(most, i - j + 1);
    }
    return most;
  }

  private answered(refused: boolean): void {
    this.answers.push(refused);
    if (this.answers.length > ANSWERS) this.answers.shift();
  }

  /** Drops the answers and pauses older than MEMORY_MS before `now`. */
  forget(now: number): void {
    const t = now - MEMORY_MS;
    let i = 0;
    while (i < this.done.length && (this.done[i] as { at: number }).at <= t) i++;
    if (i) this.done.splice(0, i);
    let j = 0;
    while (j < this.pauses.length - 1 && (this.pauses[j] as { until: number }).until <= t) j++;
    if (j) this.pauses.splice(0, j);
  }
}
