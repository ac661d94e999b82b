/** Rate-limit headers (issue 14, case 6): what an answer says about the quota left. */

/** What rate-limit headers said: requests left, when the count resets, and the quota when stated. */
export interface RateLimitHint {
  remaining: number;
  resetMs: number;
  limit?: number;
}

/**
 * Rate-limit headers of an answer: the IETF draft's `RateLimit-Remaining`/`RateLimit-Reset`
 * (seconds to the reset) or `X-RateLimit-Remaining`/`X-RateLimit-Reset` (seconds, or an epoch
 * time in seconds when it is that large). Undefined when absent or unreadable.
 */
export function readRateLimitHeaders(headers: { get(name: string): string | null }, nowMs: number): RateLimitHint | undefined {
  for (const prefix of ['ratelimit-', 'x-ratelimit-']) {
    const remaining = numberOf(headers.get(`${prefix}remaining`));
    const reset = numberOf(headers.get(`${prefix}reset`));
    if (remaining === undefined || reset === undefined) continue;
    // An epoch time (seconds) rather than seconds to go: any value past 2001.
    const resetMs = reset > 1e9 ? reset * 1000 - nowMs : reset * 1000;
    const limit = numberOf(headers.get(`${prefix}limit`));
    return { remaining, resetMs: Math.max(0, resetMs), ...(limit !== undefined ? { limit } : {}) };
  }
  return undefined;
}

function numberOf(v: string | null): number | undefined {
  if (v === null) return undefined;
  // The draft allows a list ("10, 10;w=1"): the first item counts.
  const first = v.split(',')[0]?.split(';')[0]?.trim() ?? '';
  if (!/^\d+(\.\d+)?$/.test(first)) return undefined;
  return Number(first);
}
